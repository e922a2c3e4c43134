"""A document Open WebUI could not store, as the analyst reads it (issue 48).

Stock 0.12.4 hands the database driver's text to the analyst: `PgvectorClient.insert` re-raises it,
`process_file` copies `str(e)` into the file's status and its HTTP error, and a knowledge base's `file/add`
wraps that once more: `400: (psycopg2.OperationalError) connection to server at "127.0.0.1", port 5432
failed: Connection refused`: English, an internal host and port, and no word on what to do. The patch
(edits `upload-not-stored-insert` and `-upsert`, after the stock rollback: none of the document's chunks is
kept) raises `DocumentNotStored` instead, whose text is all that reaches the analyst: in French, that the
document was not stored and to send it again, and an incident id. The driver's error goes to the log under
that id (one JSON line `upload_not_stored` at WARNING, logger `ragfr.owui`, with the traceback), as the
chat's search messages do (`ragfr.owui.runtime.chat_search`).

Only the database's errors are translated; any other error (a wrong vector width, ragfr's own refusal with
its remedy) keeps its text.
"""

from __future__ import annotations

import json
import logging
import secrets

from ragfr.errors import first_line
from ragfr.owui.runtime.errors import DocumentNotStored

log = logging.getLogger("ragfr.owui")

# The drivers' and SQLAlchemy's error classes (matched by module and name: the adapter runs inside Open
# WebUI's process, whose SQLAlchemy and psycopg2 ragfr does not import).
DRIVERS = ("sqlalchemy", "psycopg2", "psycopg", "psycopg_pool")
# The database did not answer: refused, lost or timed-out connections. Anything else from the database is a
# write it refused (a constraint, a trigger's check).
NO_ANSWER = {"OperationalError", "InterfaceError", "DisconnectionError", "TimeoutError", "PoolTimeout"}
MESSAGES = {
    "unavailable": "Le document n'a pas été enregistré : la base de données ne répond pas pour le moment. "
                   "Envoyez-le de nouveau dans quelques instants.",
    "failed": "Le document n'a pas été enregistré : la base de données a refusé l'écriture. Envoyez-le de "
              "nouveau ; si l'erreur persiste, signalez-la à l'administrateur.",
}
INCIDENT_LINE = "Référence pour l'administrateur : {incident}"


def database_error_kind(err: BaseException) -> str | None:
    """`unavailable`, `failed`, or None when `err` is not the database's."""
    classes = [c for c in type(err).__mro__ if c.__module__.split(".")[0] in DRIVERS]
    if not classes:
        return None
    return "unavailable" if any(c.__name__ in NO_ANSWER for c in classes) else "failed"


def not_stored(err: Exception, collection_name: str, operation: str) -> Exception:
    """What the patched insert/upsert raises in place of `err`: `DocumentNotStored` for a database error
    (logged here with its incident id), `err` itself otherwise."""
    kind = database_error_kind(err)
    if kind is None:
        return err
    incident = secrets.token_hex(4)
    log.warning(json.dumps({
        "event": "upload_not_stored", "incident": incident, "kind": kind, "operation": operation,
        "collection": collection_name, "reason": f"{type(err).__name__}: {first_line(err)}",
    }, ensure_ascii=False), exc_info=err)
    return DocumentNotStored(f"{MESSAGES[kind]} {INCIDENT_LINE.format(incident=incident)}", kind, incident)
