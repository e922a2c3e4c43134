"""One migrator per database: a session advisory lock, released by the server when the process dies
(a `kill -9` included), so an interrupted run never leaves a stale lock behind."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from ragfr.embmigrate import names
from ragfr.embmigrate.errors import MigrationRunningError


@contextmanager
def migration_lock(conn: psycopg.Connection) -> Iterator[None]:
    """Hold the lock for the block, or raise MigrationRunningError naming the holder; never waits."""
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (names.LOCK_KEY,)).fetchone()
    if not (row and row[0]):
        raise MigrationRunningError(
            f"an embedding migration is already running on this database ({holder(conn)}); follow it with "
            "`ragfr embeddings status`, and run this command again once it has finished or been stopped "
            "(Ctrl-C or kill -TERM where it runs: it stops after its batch in flight)"
        )
    try:
        yield
    finally:
        if not conn.closed:
            conn.execute("SELECT pg_advisory_unlock(%s)", (names.LOCK_KEY,))


def holder(conn: psycopg.Connection) -> str:
    """Who holds the lock, for messages: backend pid, client address, application and start time."""
    row = conn.execute(
        "SELECT a.pid, coalesce(host(a.client_addr), 'local'), a.application_name, a.backend_start"
        "  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.locktype = 'advisory' AND l.granted AND l.database = ("
        "       SELECT oid FROM pg_database WHERE datname = current_database())"
        "   AND ((l.classid::bigint << 32) | l.objid::bigint) = %s",
        (names.LOCK_KEY,),
    ).fetchone()
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
