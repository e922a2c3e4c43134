"""Issue 13 item 8: through the REAL Open WebUI 0.12.4 with the ragfr patch active, user B can neither retrieve
nor see as sources any chunk of user A's private knowledge base, even when B names A's knowledge base or
file explicitly in the request.

Access control is Open WebUI's (retrieval/utils.py `filter_accessible_collections` drops collections a user
may not read BEFORE any search, and the retrieval routers' `_validate_collection_access` refuses them); the
patch replaces the search underneath, so this proves the patched path keeps that guarantee. It could fail:
  - the SAME request by A (the owner) retrieves the passage (asserted first): the question and the data
    find it, so only access control stands between B and it;
  - what B's searches returned is read from ragfr's own search log (chunk ids), not only from the reply, so
    a chunk retrieved but hidden later would still fail the test.
A is the admin (owner of the private knowledge base); B is a plain user created by the admin. Checked to
fail when B is created as an admin instead (Open WebUI's access control bypassed): "B retrieved A's chunks".
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from .stack import CHAT_MODEL, Server, answer_text, ask, call, knowledge_base, passages

pytestmark = [pytest.mark.owui, pytest.mark.slow]

SECRET = ("Note confidentielle de la direction : le budget de la réorganisation du site de Lyon est fixé à "
          "quatre millions deux cent mille euros, versés en trois tranches avant la fin de l'exercice. ")
DOCUMENT = SECRET + ("Le comité de pilotage se réunit chaque mardi pour suivre les dépenses engagées, et tout "
                     "dépassement supérieur à cinq pour cent doit être approuvé par la directrice financière. ") * 6
QUESTION = "Quel est le budget de la réorganisation du site de Lyon ?"
MARKER = "quatre millions deux cent mille euros"


def _user(server: Server, admin: str) -> str:
    email = f"b-{uuid.uuid4().hex[:8]}@example.org"
    password = "ragfr-isolation-Passw0rd!"
    call("POST", server.url + "/api/v1/auths/add",
         {"name": "Utilisateur B", "email": email, "password": password, "role": "user"}, admin)
    signed = call("POST", server.url + "/api/v1/auths/signin", {"email": email, "password": password})
    assert signed["role"] == "user"
    return str(signed["token"])


def _search_hits(server: Server, since: int) -> list[str]:
    return [h for event in server.log_events("search")[since:] for h in event["hits"]]


def _refused(method: str, url: str, body: dict, token: str) -> str:
    try:
        out = call(method, url, body, token)
    except AssertionError as err:  # stack.call turns HTTP errors into AssertionError with the status
        return str(err)
    raise AssertionError(f"{url} answered B: {str(out)[:500]}")


def test_user_b_cannot_retrieve_user_a_private_knowledge(owui_server: Server, admin_token: str) -> None:
    server = owui_server
    kb = knowledge_base(server, admin_token, f"Privé A {uuid.uuid4().hex[:6]}", {"note-direction.txt": DOCUMENT})
    knowledge = call("GET", f"{server.url}/api/v1/knowledge/{kb}", token=admin_token)
    assert not knowledge.get("access_grants") and not knowledge.get("access_control"), knowledge  # private
    with psycopg.connect(server.dsn) as conn:
        file_ids = sorted({r[0] for r in conn.execute(
            "SELECT vmetadata->>'file_id' FROM document_chunk WHERE collection_name = %s", (kb,))})
        assert file_ids and None not in file_ids, file_ids
        a_chunks = {r[0] for r in conn.execute(
            "SELECT id FROM document_chunk WHERE collection_name = ANY(%s)", ([kb, *(f"file-{f}" for f in file_ids)],))}
    assert a_chunks

    # Control: the owner's request retrieves the passage through the patched search (ragfr's search log).
    before = len(server.log_events("search"))
    reply = ask(server, admin_token, QUESTION, kb)
    assert len(server.log_events("search")) > before, "the ragfr patch did not search: is it active?"
    assert set(_search_hits(server, before)) & a_chunks
    assert any(MARKER in text for text, _ in passages(reply)), reply

    # The chat model is the admin's until shared: make it readable by every user (only the model, not the
    # knowledge), so that B's chat reaches retrieval at all.
    call("POST", server.url + "/api/v1/models/create", {
        "id": CHAT_MODEL, "base_model_id": None, "name": "Double", "meta": {}, "params": {},
        "access_grants": [{"principal_type": "user", "principal_id": "*", "permission": "read"}]}, admin_token)
    b = _user(server, admin_token)
    # B names A's knowledge base, then A's file, in the chat request.
    for item in ({"type": "collection", "id": kb}, *({"type": "file", "id": f} for f in file_ids)):
        before = len(server.log_events("search"))
        reply = call("POST", server.url + "/api/chat/completions", {
            "model": CHAT_MODEL, "stream": False,
            "messages": [{"role": "user", "content": QUESTION}], "files": [item]}, b)
        assert not set(_search_hits(server, before)) & a_chunks, f"B retrieved A's chunks via {item}"
        assert not any(MARKER in text or MARKER in str(meta) for text, meta in passages(reply)), (item, reply)
        assert MARKER not in answer_text(reply)
    # B asks Open WebUI's retrieval API directly for A's collections: refused before any search.
    before = len(server.log_events("search"))
    for names in ([kb], [f"file-{f}" for f in file_ids]):
        err = _refused("POST", server.url + "/api/v1/retrieval/query/collection",
                       {"collection_names": names, "query": QUESTION, "k": 5}, b)
        assert "403" in err or "401" in err or "404" in err, err
    err = _refused("POST", server.url + "/api/v1/retrieval/query/doc", {"collection_name": kb, "query": QUESTION}, b)
    assert "403" in err or "401" in err or "404" in err, err
    assert not set(_search_hits(server, before)) & a_chunks
    # Nor can B read the knowledge base or its file.
    _refused("GET", f"{server.url}/api/v1/knowledge/{kb}", {}, b)
