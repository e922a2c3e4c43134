"""One changer of the vector indexes per database: an embedding migration (`ragfr embeddings migrate`,
`rollback`, `finalize`), `ragfr migrate`'s rebuild of idx_document_chunk_vector and `ragfr filter-index
sync` each hold this session advisory lock while they work. The server releases it when the process dies
(a `kill -9` included), so an interrupted run never leaves a stale lock behind.

The holder names itself: its `application_name` is set to its command while it holds the lock, so the
refusal another command gets says which command to wait for, and pg_stat_activity shows it too."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from ragfr.db import names
from ragfr.errors import DatabaseError

COMMAND_PREFIX = "ragfr "
WAIT_ADVICE = ("if it is an embedding migration, follow it with `ragfr embeddings status`; run this command again "
               "once it has finished or been stopped (Ctrl-C or kill -TERM where it runs: a migration stops after "
               "its batch in flight)")


class IndexLockBusy(DatabaseError):
    """Another ragfr command holds the vector-index lock on this database."""


@contextmanager
def index_lock(conn: psycopg.Connection, command: str) -> Iterator[None]:
    """Hold the lock for the block as `command` (e.g. "ragfr migrate"), or raise IndexLockBusy naming the
    holder's command; never waits. `conn`: autocommit."""
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (names.LOCK_KEY,)).fetchone()
    if not (row and row[0]):
        raise IndexLockBusy(f"{holder_command(conn)} is already running on this database ({holder(conn)}); "
                            f"{WAIT_ADVICE}")
    previous = conn.execute("SELECT current_setting('application_name')").fetchone()
    conn.execute("SELECT set_config('application_name', %s, false)", (command,))
    try:
        yield
    finally:
        if not conn.closed:
            conn.execute("SELECT set_config('application_name', %s, false)", (previous[0] if previous else "",))
            conn.execute("SELECT pg_advisory_unlock(%s)", (names.LOCK_KEY,))


_HOLDER = (
    "SELECT a.pid, coalesce(host(a.client_addr), 'local'), a.application_name, a.backend_start"
    "  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
    " WHERE l.locktype = 'advisory' AND l.granted AND l.database = ("
    "       SELECT oid FROM pg_database WHERE datname = current_database())"
    "   AND ((l.classid::bigint << 32) | l.objid::bigint) = %s"
)


def holder_command(conn: psycopg.Connection) -> str:
    """`ragfr <command>` of the holder, or "another ragfr command" for a holder that did not name itself."""
    row = conn.execute(_HOLDER, (names.LOCK_KEY,)).fetchone()
    app = str(row[2] or "") if row else ""
    return f"`{app}`" if app.startswith(COMMAND_PREFIX) else "another ragfr command"


def holder(conn: psycopg.Connection) -> str:
    """Who holds the lock, for messages: backend pid, client address, application and start time."""
    row = conn.execute(_HOLDER, (names.LOCK_KEY,)).fetchone()
    if row is None:
        return "holder not visible"
    pid, addr, app, started = row
    return f"server pid {pid}, client {addr}, application {app or '-'}, since {started:%Y-%m-%d %H:%M:%S %Z}"


def is_held(conn: psycopg.Connection) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND ((classid::bigint << 32) | objid::bigint) = %s"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        (names.LOCK_KEY,),
    ).fetchone()
    return bool(row and row[0])
