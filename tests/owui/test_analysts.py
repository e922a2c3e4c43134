"""Issue 48 item 7: an analyst the admin adds works on day one, with the settings of `make up` / the chart.

Open WebUI 0.12.4 alone gives an account of role `user` an empty model list (a base model is the admin's until
access to it is granted) and refuses it a knowledge base (`workspace.knowledge` off); the admin's own list offers
the embedding model as a chat model. With openwebui.analysts' defaults (tools/ragfr_tools/owui_settings.py, the
chart's values.yaml), through the REST API as the browser calls it, with accounts the admin adds
(POST /api/v1/auths/add), never the first (admin) account:
  - the analyst's models: the chat model, not the embedding model (nor in the admin's list);
  - the analyst creates a knowledge base shared with a group, uploads the contract, and gets the grounded,
    cited answer (ragfr's search ran: its log);
  - another analyst of that group gets the same answer from it; an analyst outside the group cannot read it.
Each step fails on stock settings: no model ("Model not found"), 401 on /knowledge/create, sharing dropped.
"""

from __future__ import annotations

import uuid

import pytest

from ragfr_tools.fixtures import ANSWERABLE, FILENAME, THEFT_SENTENCE
from ragfr_tools.fixtures import CONTRACT as DOCUMENT

from .stack import CHAT_MODEL, EMBED_NAME, Server, add_analyst, answer_text, ask, call, multipart, passages

pytestmark = [pytest.mark.owui, pytest.mark.slow]

PASSWORD = "ragfr-analyste-Passw0rd!"


def analyst(server: Server, admin_token: str, name: str) -> tuple[str, str]:
    email = f"{name.lower()}-{uuid.uuid4().hex[:8]}@example.org"
    token = add_analyst(server, admin_token, name, email, PASSWORD)
    me = call("GET", server.url + "/api/v1/auths/", token=token)
    return token, str(me["id"])


def model_ids(server: Server, token: str) -> list[str]:
    return [m["id"] for m in call("GET", server.url + "/api/models", token=token)["data"]]


def test_an_analyst_the_admin_adds_chats_and_builds_a_shared_knowledge_base(
        owui_server: Server, admin_token: str) -> None:
    server = owui_server
    api = server.url + "/api/v1"
    alice, alice_id = analyst(server, admin_token, "Alice")
    bob, bob_id = analyst(server, admin_token, "Bob")
    carol, _ = analyst(server, admin_token, "Carol")

    embedding = f"{EMBED_NAME}:latest"
    assert model_ids(server, alice) == [CHAT_MODEL], "the analyst sees the release's chat model, and only it"
    assert embedding not in model_ids(server, admin_token), "the embedding model is not a chat model"

    group = call("POST", api + "/groups/create", {"name": f"Sinistres {uuid.uuid4().hex[:6]}",
                                                  "description": "Service sinistres"}, admin_token)
    call("POST", f"{api}/groups/id/{group['id']}/users/add", {"user_ids": [alice_id, bob_id]}, admin_token)

    grant = {"principal_type": "group", "principal_id": group["id"], "permission": "read"}
    kb = call("POST", api + "/knowledge/create",
              {"name": "Contrats d'Alice", "description": "Contrats", "access_grants": [grant]}, alice)
    shared = [(g["principal_type"], g["principal_id"], g["permission"]) for g in kb.get("access_grants") or []]
    assert ("group", group["id"], "read") in shared, f"the share with the group was dropped: {kb}"

    raw, ctype = multipart(FILENAME, DOCUMENT.encode("utf-8"))
    uploaded = call("POST", api + "/files/?process=true&process_in_background=false", token=alice, raw=raw,
                    content_type=ctype)
    call("POST", f"{api}/knowledge/{kb['id']}/file/add", {"file_id": uploaded["id"]}, alice)

    for who in (alice, bob):  # the owner, then another analyst of the group
        searches, chats = len(server.log_events("search")), server.double.chat_requests()
        reply = ask(server, who, ANSWERABLE, kb["id"])
        assert len(server.log_events("search")) > searches, "ragfr's search did not run"
        assert THEFT_SENTENCE in answer_text(reply), answer_text(reply)
        assert any(THEFT_SENTENCE in text for text, _ in passages(reply)), passages(reply)
        assert server.double.chat_requests() == chats + 1

    # Outside the group: the knowledge base stays private to it.
    try:
        call("GET", f"{api}/knowledge/{kb['id']}", token=carol)
    except AssertionError as err:
        assert "-> 40" in str(err), err
    else:
        raise AssertionError("an analyst outside the group read the knowledge base")
