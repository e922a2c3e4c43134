"""The embedding migration's own DDL on document_chunk: the shadow column of the new space with the guard
trigger that clears it when a row's text changes, and the renames, NOT NULL flips and drops of the switch,
rollback and finalize. Each runs in the caller's transaction, which ragfr.db.ddl.in_locked_transaction
bounds; the names are ragfr.embmigrate.names'."""

from __future__ import annotations

import psycopg
from psycopg import sql

from ragfr.embmigrate import names


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
