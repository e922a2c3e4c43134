"""Schema changes on document_chunk, each short and taken under a bounded lock wait.

ALTER TABLE needs an ACCESS EXCLUSIVE lock for a moment. Queued behind a long query, it would block every
reader queued behind IT (Open WebUI's searches included); a short lock_timeout and a retry keep that
stall to at most the timeout instead.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg
from psycopg import sql

from ragfr.embmigrate import names
from ragfr.embmigrate.catalog import Index
from ragfr.errors import DatabaseError

log = logging.getLogger(__name__)
T = TypeVar("T")

LOCK_TIMEOUT = "2s"
LOCK_ATTEMPTS = 30
_OPTION = re.compile(r"^[a-z_]+=[A-Za-z0-9_.]+$")


def in_locked_transaction(conn: psycopg.Connection, what: str, work: Callable[[psycopg.Connection], T]) -> T:
    """Run `work` in one transaction with a bounded lock wait, retrying while the table is busy."""
    for attempt in range(1, LOCK_ATTEMPTS + 1):
        try:
            with conn.transaction():
                conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(LOCK_TIMEOUT)))
                return work(conn)
        except psycopg.errors.LockNotAvailable:
            log.warning("%s: %s is busy (attempt %d/%d), retrying", what, names.TABLE, attempt, LOCK_ATTEMPTS)
            time.sleep(min(0.2 * attempt, 2.0))
    raise DatabaseError(
        f"{what}: could not lock {names.TABLE} within {LOCK_TIMEOUT} in {LOCK_ATTEMPTS} attempts; "
        "a long-running query or transaction holds it (see pg_stat_activity); nothing was changed"
    )


def add_next(conn: psycopg.Connection, dims: int) -> None:
    """Shadow column for the new space, and the trigger that clears it when a row's text changes."""
    conn.execute(
        sql.SQL("ALTER TABLE {t} ADD COLUMN {v} vector({d}), ADD COLUMN {m} text").format(
            t=sql.Identifier(names.TABLE),
            v=sql.Identifier(names.VECTOR_NEXT),
            d=sql.Literal(dims),
            m=sql.Identifier(names.MODEL_NEXT),
        )
    )
    create_guard(conn, names.TRIGGER_NEXT, names.FUNCTION_NEXT)


def drop_columns(conn: psycopg.Connection, trigger: str, vector_col: str, model_col: str) -> None:
    """Remove one space's trigger and columns; their index goes with the column."""
    conn.execute(
        sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(sql.Identifier(trigger), sql.Identifier(names.TABLE))
    )
    conn.execute(
        sql.SQL("ALTER TABLE {t} DROP COLUMN IF EXISTS {v}, DROP COLUMN IF EXISTS {m}").format(
            t=sql.Identifier(names.TABLE), v=sql.Identifier(vector_col), m=sql.Identifier(model_col)
        )
    )


def create_guard(conn: psycopg.Connection, trigger: str, function: str) -> None:
    conn.execute(
        sql.SQL("CREATE TRIGGER {} BEFORE INSERT OR UPDATE ON {} FOR EACH ROW EXECUTE FUNCTION {}()").format(
            sql.Identifier(trigger), sql.Identifier(names.TABLE), sql.Identifier(function)
        )
    )


def drop_guard(conn: psycopg.Connection, trigger: str) -> None:
    conn.execute(
        sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(sql.Identifier(trigger), sql.Identifier(names.TABLE))
    )


def rename_column(conn: psycopg.Connection, old: str, new: str) -> None:
    conn.execute(
        sql.SQL("ALTER TABLE {} RENAME COLUMN {} TO {}").format(
            sql.Identifier(names.TABLE), sql.Identifier(old), sql.Identifier(new)
        )
    )


def rename_index(conn: psycopg.Connection, old: str, new: str) -> None:
    conn.execute(sql.SQL("ALTER INDEX {} RENAME TO {}").format(sql.Identifier(old), sql.Identifier(new)))


def set_not_null(conn: psycopg.Connection, column: str, not_null: bool) -> None:
    verb = "SET" if not_null else "DROP"
    conn.execute(
        sql.SQL("ALTER TABLE {} ALTER COLUMN {} " + verb + " NOT NULL").format(
            sql.Identifier(names.TABLE), sql.Identifier(column)
        )
    )


def create_index_statement(like: Index, name: str, column: str, *, concurrently: bool) -> sql.Composed:
    """The live index's definition (method, operator class, options) on another column."""
    bad = [o for o in like.options if not _OPTION.match(o)]
    if bad:
        raise DatabaseError(f"unexpected options {bad} on index {like.name}; refusing to copy them")
    with_clause = sql.SQL(" WITH ({})").format(sql.SQL(", ").join(sql.SQL(o) for o in like.options))
    return sql.SQL("CREATE INDEX {conc}{name} ON {t} USING {method} ({col} {opclass}){with_}").format(
        conc=sql.SQL("CONCURRENTLY " if concurrently else ""),
        name=sql.Identifier(name),
        t=sql.Identifier(names.TABLE),
        method=sql.Identifier(like.method),
        col=sql.Identifier(column),
        opclass=sql.Identifier(like.opclass),
        with_=with_clause if like.options else sql.SQL(""),
    )
