"""Issue 48 item 6: an upload that fails because the database does not answer tells the analyst, in French, that
the document was not stored and to send it again, with an incident id, and no internal detail; the detail is in
the log under that id.

Stock 0.12.4 showed `400: (psycopg2.OperationalError) connection to server at "127.0.0.1", port …, failed:
Connection refused`. The REAL patched Open WebUI (settings of `make up`) reaches its vector database through a
relay this test cuts (tests/support/tcp_cut.py: the shared test cluster keeps running for the other tests);
an analyst the admin added uploads into a knowledge base as the browser does (upload, processed, then
`file/add`). The same upload, once the relay listens again, is stored: nothing of the failed one was kept.
A chat question in the same outage: ragfr's search logs `unavailable` (not `busy`), no model is called, and the
analyst reads that the database does not answer (chat_gate.UNAVAILABLE["unavailable"]), not the « saturée »
(busy) message.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.support.tcp_cut import TcpCut, relayed

from ragfr.owui.runtime.chat_gate import UNAVAILABLE
from ragfr.owui.runtime.uploads import MESSAGES
from ragfr_tools import pgdb
from ragfr_tools.fixtures import ANSWERABLE, FILENAME
from ragfr_tools.fixtures import CONTRACT as DOCUMENT

from .stack import (
    E5_SPACE,
    Server,
    add_analyst,
    answer_text,
    ask,
    call,
    multipart,
    sign_up_admin,
    start_double,
    start_open_webui,
    stop,
)

pytestmark = [pytest.mark.owui, pytest.mark.slow]

INCIDENT = re.compile(r"Référence pour l'administrateur : ([0-9a-f]{8})")


@pytest.fixture(scope="module")
def relayed_server(owui_site_packages: Path, patched_tree: Path, pg_dsn: str,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, TcpCut, str]]:
    from ragfr.vector_index.upgrade import migrate

    tmp = tmp_path_factory.mktemp("owui-upload-fault")
    with pgdb.fresh_database(pg_dsn, "ragfr_fault") as dsn, relayed(dsn) as (through, relay):
        migrate(dsn, 384, E5_SPACE)
        double = start_double(tmp)
        try:
            server = start_open_webui(tmp, owui_site_packages, patched_tree, through, double)
            try:
                yield server, relay, dsn
            finally:
                stop(server.proc)
                print(server.log.read_text(errors="replace")[-3000:])
        finally:
            stop(double.proc)


def upload(server: Server, token: str, kb_id: str) -> tuple[dict[str, Any], str]:
    """The browser's steps: the file uploaded and processed, then added to the knowledge base; the file as
    Open WebUI keeps it and what `file/add` answered (its error text, or "" when it was added)."""
    api = server.url + "/api/v1"
    raw, ctype = multipart(FILENAME, DOCUMENT.encode("utf-8"))
    uploaded = call("POST", api + "/files/?process=true&process_in_background=false", token=token, raw=raw,
                    content_type=ctype)
    req = urllib.request.Request(f"{api}/knowledge/{kb_id}/file/add", method="POST",
                                 data=json.dumps({"file_id": uploaded["id"]}).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=300):
            added = ""
    except urllib.error.HTTPError as err:
        added = str(json.loads(err.read())["detail"])  # what the browser shows
    return call("GET", f"{api}/files/{uploaded['id']}", token=token), added


def test_an_upload_during_a_database_outage_says_not_stored_in_french_and_a_retry_stores_it(
        relayed_server: tuple[Server, TcpCut, str]) -> None:
    server, relay, dsn = relayed_server
    admin = sign_up_admin(server)
    analyst = add_analyst(server, admin, "Analyste", f"a-{uuid.uuid4().hex[:8]}@example.org", "ragfr-fault-Passw0rd!")
    kb = call("POST", server.url + "/api/v1/knowledge/create", {"name": "Contrats", "description": "c"}, analyst)

    relay.cut()
    try:
        file, added = upload(server, analyst, kb["id"])
        # The chat in the same outage: ragfr's search says the database does not answer, not that it is busy.
        searches, chats = len(server.log_events("search_unavailable")), server.double.chat_requests()
        reply = answer_text(ask(server, analyst, ANSWERABLE, kb["id"]))
    finally:
        relay.restore()
    print("the chat says:", reply)
    assert [e["kind"] for e in server.log_events("search_unavailable")[searches:]] == ["unavailable"]
    assert server.double.chat_requests() == chats, "a model was called without passages"
    assert reply.startswith(UNAVAILABLE["unavailable"]) and "saturée" not in reply, reply
    assert "psycopg" not in reply and str(relay.port) not in reply, reply
    shown = [str((file.get("data") or {}).get("error") or ""), added]
    print("the analyst reads:", shown)
    assert (file.get("data") or {}).get("status") == "failed", file
    for text in shown:
        assert MESSAGES["unavailable"] in text, text
        for internal in ("psycopg", "OperationalError", "127.0.0.1", str(relay.port), "Connection refused"):
            assert internal not in text, f"{internal!r} reached the analyst: {text}"
    incidents = {m.group(1) for t in shown for m in INCIDENT.finditer(t)}
    assert incidents, shown
    logged = {e["incident"]: e for e in server.log_events("upload_not_stored")}
    for incident in incidents:
        assert logged[incident]["kind"] == "unavailable"
        assert "OperationalError" in logged[incident]["reason"], logged[incident]
    with psycopg.connect(dsn) as conn:
        stored = conn.execute("SELECT count(*) FROM document_chunk WHERE collection_name = ANY(%s)",
                              ([kb["id"], f"file-{file['id']}"],)).fetchone()
    assert stored is not None and stored[0] == 0, "part of the failed upload was stored"

    # The database answers again: the same document, sent again, is stored and in the knowledge base.
    file, added = upload(server, analyst, kb["id"])
    assert added == "" and (file.get("data") or {}).get("status") == "completed", (file, added)
    with psycopg.connect(dsn) as conn:
        stored = conn.execute("SELECT count(*) FROM document_chunk WHERE collection_name = %s", (kb["id"],)).fetchone()
    assert stored is not None and stored[0] >= 2
