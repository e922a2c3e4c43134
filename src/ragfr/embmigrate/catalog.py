"""What the database holds, read from the system catalogs, for an embedding migration: the schema check every
`ragfr embeddings` command starts with, the objects that depend on a column the swap renames, and the rows
left to embed. The shape of the columns and indexes the swap must keep identical is ragfr.vector_index.shape's."""

from __future__ import annotations

import psycopg

from ragfr.embmigrate import names
from ragfr.errors import DatabaseError
from ragfr.vector_index.shape import column, index


def require_schema(conn: psycopg.Connection) -> None:
    """DatabaseError unless `ragfr migrate` has created everything this tool needs (nothing is changed)."""
    row = conn.execute(
        "SELECT to_regclass('ragfr_schema_migrations') IS NOT NULL, to_regclass(%s) IS NOT NULL,"
        " to_regclass(%s) IS NOT NULL",
        (names.TABLE, names.SPACE_TABLE),
    ).fetchone()
    assert row is not None
    has_migrations, has_chunks, has_space = row
    if not (has_migrations and has_chunks and has_space):
        raise DatabaseError(
            "this database has no ragfr schema (document_chunk, ragfr_embedding_space): "
            "run `ragfr migrate --dsn DSN --dims N --embedding-model SPEC` first"
        )
    applied = conn.execute(
        "SELECT 1 FROM ragfr_schema_migrations WHERE version = %s", (names.SCHEMA_VERSION,)
    ).fetchone()
    if applied is None:
        raise DatabaseError(
            f"the ragfr schema predates embedding migrations (migration {names.SCHEMA_VERSION:04d} not applied): "
            "run `ragfr migrate --dsn DSN` first"
        )
    if column(conn, names.VECTOR) is None or index(conn, names.INDEX) is None:
        raise DatabaseError(
            f"{names.TABLE} has no column {names.VECTOR!r} or no index {names.INDEX}: not a ragfr schema"
        )


def dependents(conn: psycopg.Connection, column_name: str) -> list[str]:
    """Objects (indexes, views, constraints...) that depend on a column of document_chunk.

    The swap renames columns; anything attached to a column follows it to its new name, so an unexpected
    dependent (say, a view over `vector`) would silently end up on the old space.
    """
    rows = conn.execute(
        "SELECT DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid)"
        "  FROM pg_depend d JOIN pg_attribute a"
        "    ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid"
        " WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = to_regclass(%s)"
        "   AND a.attname = %s AND d.deptype IN ('n', 'a')",
        (names.TABLE, column_name),
    ).fetchall()
    return sorted(str(r[0]) for r in rows)


def row_counts(conn: psycopg.Connection, vector_col: str) -> tuple[int, int]:
    """(rows in the table, rows whose `vector_col` is still NULL)."""
    from psycopg import sql

    row = conn.execute(
        sql.SQL("SELECT count(*), count(*) FILTER (WHERE {} IS NULL) FROM {}").format(
            sql.Identifier(vector_col), sql.Identifier(names.TABLE)
        )
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])
