"""What the database holds, read from the system catalogs: the schema check every command starts with,
and the shape of the live and shadow columns and indexes that the swap must keep identical."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from ragfr.db import names, vector_index
from ragfr.db.phases import OPEN_MIGRATION
from ragfr.db.vector_index import Precision
from ragfr.errors import DatabaseError


@dataclass(frozen=True)
class Column:
    name: str
    dims: int  # vector(N) typmod; -1 for an unconstrained vector or a non-vector column
    not_null: bool


@dataclass(frozen=True)
class Index:
    name: str
    column: str
    method: str  # "hnsw", "ivfflat", ...
    opclass: str
    options: tuple[str, ...]  # reloptions, e.g. ("m=16", "ef_construction=64")
    valid: bool
    definition: str
    # True for an index on an expression of `column` (migration 0011: `(vector::halfvec(N))`), not the column.
    expression: bool = False

    @property
    def precision(self) -> Precision:
        """The precision the graph stores: what a nearest-neighbour ORDER BY must cast to to use it."""
        return vector_index.precision_of("halfvec" if self.opclass.startswith("halfvec") else "vector")


def open_migration_id(conn: psycopg.Connection) -> int | None:
    """The number of the open embedding migration, or None. While one is open it owns the vector indexes:
    `ragfr migrate` and `ragfr filter-index sync` leave them as they are. At most one row matches (migration
    0100's one-open index); the clause is built from the phases' table (db/phases.py)."""
    row = conn.execute(f"SELECT id FROM {names.STATE_TABLE} WHERE {OPEN_MIGRATION}").fetchone()  # noqa: S608
    return None if row is None else int(row[0])


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


def column(conn: psycopg.Connection, name: str) -> Column | None:
    row = conn.execute(
        "SELECT atttypmod, attnotnull FROM pg_attribute"
        " WHERE attrelid = to_regclass(%s) AND attname = %s AND NOT attisdropped",
        (names.TABLE, name),
    ).fetchone()
    return None if row is None else Column(name=name, dims=int(row[0]), not_null=bool(row[1]))


def index(conn: psycopg.Connection, name: str) -> Index | None:
    # An expression index has indkey[0] = 0; the column it reads is then the one it depends on.
    row = conn.execute(
        "SELECT coalesce(a.attname, (SELECT e.attname FROM pg_depend d"
        "         JOIN pg_attribute e ON e.attrelid = d.refobjid AND e.attnum = d.refobjsubid"
        "        WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid"
        "          AND d.refclassid = 'pg_class'::regclass AND d.refobjsubid > 0 ORDER BY e.attnum LIMIT 1)),"
        "       am.amname, oc.opcname, coalesce(c.reloptions, '{}'), i.indisvalid,"
        "       pg_get_indexdef(c.oid), i.indkey[0] = 0"
        "  FROM pg_class c"
        "  JOIN pg_index i ON i.indexrelid = c.oid"
        "  JOIN pg_am am ON am.oid = c.relam"
        "  JOIN pg_opclass oc ON oc.oid = i.indclass[0]"
        "  LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]"
        " WHERE c.oid = to_regclass(%s)",
        (name,),
    ).fetchone()
    if row is None:
        return None
    col, method, opclass, options, valid, definition, expression = row
    return Index(name, str(col), str(method), str(opclass), tuple(options), bool(valid), str(definition),
                 bool(expression))


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
