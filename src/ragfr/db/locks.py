"""Who holds a lock: the other sessions, from pg_locks and pg_stat_activity, in one message line.

Every "waited too long for a lock" message names them, with their server pid: the fix is
`SELECT pg_terminate_backend(pid)` from SQL (a `kill` on the client's host would not find that pid).
"""

from __future__ import annotations

from datetime import datetime

import psycopg

_SESSIONS = (
    "SELECT DISTINCT a.pid, a.application_name, a.state, a.xact_start, a.query_start,"
    "       left(regexp_replace(a.query, '\\s+', ' ', 'g'), 60)"
    "  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
    " WHERE l.granted AND l.pid <> pg_backend_pid() AND {condition}"
    " ORDER BY a.xact_start NULLS LAST, a.pid LIMIT 3"
)


def relation_holders(conn: psycopg.Connection, relation: str) -> str:
    """Sessions holding any lock on `relation` (a table name)."""
    # Relation OIDs are per database, and databases cloned from one template (or restored from one dump) share
    # them: without the database, another database's readers of its own document_chunk would be named.
    return _describe(
        conn,
        "l.locktype = 'relation' AND l.relation = to_regclass(%s)"
        " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        (relation,),
    )


def advisory_holders(conn: psycopg.Connection, key: int) -> str:
    """Sessions holding the session-level advisory lock `key` (pg_advisory_lock(bigint))."""
    return _describe(
        conn,
        "l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND ((l.classid::bigint << 32) | l.objid::bigint) = %s",
        (key,),
    )


def any_relation_holders(conn: psycopg.Connection) -> str:
    """Sessions holding locks on tables of this database (what a schema change may have waited for)."""
    return _describe(
        conn,
        "l.locktype = 'relation' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        (),
    )


def _describe(conn: psycopg.Connection, condition: str, params: tuple[object, ...]) -> str:
    rows = conn.execute(_SESSIONS.replace("{condition}", condition), params).fetchall()
    if not rows:
        return "the holder has already gone"
    return "held by " + "; ".join(
        f"server pid {pid} (application {app or '-'}, {state or '?'}, transaction since "
        f"{_when(xact)}, query started {_when(qstart)}: {query or '-'})"
        for pid, app, state, xact, qstart, query in rows
    )


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else f"{moment:%Y-%m-%d %H:%M:%S %Z}".strip()
