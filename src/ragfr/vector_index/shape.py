"""The shape of the vector column and of an HNSW index, read from the system catalogs, and the CREATE INDEX
that copies an index's shape onto another column, another dimension or a subset of the rows: what the live
index's rebuild, the declared filters' graphs and an embedding migration's new index share."""

from __future__ import annotations

import re
from dataclasses import dataclass

import psycopg
from psycopg import sql

from ragfr.db import names
from ragfr.errors import DatabaseError
from ragfr.vector_index import precision
from ragfr.vector_index.precision import Precision

_OPTION = re.compile(r"^[a-z_]+=[A-Za-z0-9_.]+$")


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
        return precision.precision_of("halfvec" if self.opclass.startswith("halfvec") else "vector")


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


def create_index_statement(
    like: Index, name: str, column: str, *, concurrently: bool, dims: int | None = None,
    where: sql.Composable | None = None, normalized: bool = False,
) -> sql.Composed:
    """The live index's definition (method, operator class, options) on another column of `dims` dimensions;
    with `where`, a partial index of the rows it accepts (a declared filter's graph, ragfr.vector_index.graphs),
    `normalized` on the normalized vectors (a collection's own graph, ragfr.vector_index.graphs).

    The half-precision index (migration 0011) is on the expression `(vector::halfvec(N))`: the copy casts
    the other column to halfvec of ITS dimension. Any other expression index is refused, not guessed at."""
    bad = [o for o in like.options if not _OPTION.match(o)]
    if bad:
        raise DatabaseError(f"unexpected options {bad} on index {like.name}; refusing to copy them")
    if like.expression:
        if like.precision != "halfvec" or dims is None:
            raise DatabaseError(f"index {like.name} is on an expression ragfr does not know ({like.definition}); "
                                "refusing to copy it")
        key: sql.Composable = precision.index_expression(column, "halfvec", dims)
    else:
        key = sql.SQL("{} {}").format(sql.Identifier(column), sql.Identifier(like.opclass))
    if normalized:  # a collection's own graph (ragfr.vector_index.graphs): the same shape on the normalized vectors
        if dims is None:
            raise DatabaseError(f"a collection's graph needs the dimension of {column}")
        key = precision.index_expression(column, like.precision, dims, normalized=True)
    with_clause = sql.SQL(" WITH ({})").format(sql.SQL(", ").join(sql.SQL(o) for o in like.options))
    return sql.SQL("CREATE INDEX {conc}{name} ON {t} USING {method} ({key}){with_}{where}").format(
        conc=sql.SQL("CONCURRENTLY " if concurrently else ""),
        name=sql.Identifier(name),
        t=sql.Identifier(names.TABLE),
        method=sql.Identifier(like.method),
        key=key,
        with_=with_clause if like.options else sql.SQL(""),
        where=sql.SQL(" WHERE {}").format(where) if where is not None else sql.SQL(""),
    )
