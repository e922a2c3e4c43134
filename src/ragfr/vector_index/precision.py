"""Which HNSW index holds the vectors, and the nearest-neighbour SQL that walks it.

`idx_document_chunk_vector` (migrations 0004, 0011) is either on the column itself (`vector
vector_cosine_ops`, full precision) or on the expression `(vector::halfvec(N))` (`halfvec_cosine_ops`, half
the bytes per graph node); the column is `vector(N)` either way, for Open WebUI. PostgreSQL uses an index
for `ORDER BY x <=> q` only when `x` is the index's very expression, so each statement is built for the
index the catalog names, read in the same round trip as the search settings (`PRECISION_SQL`).
"""

from __future__ import annotations

from typing import Literal

from psycopg import sql

INDEX = "idx_document_chunk_vector"
Precision = Literal["vector", "halfvec"]
PRECISIONS: tuple[Precision, ...] = ("vector", "halfvec")

# 'halfvec' or 'vector' for an index, NULL when there is none (then nothing walks a graph anyway).
PRECISION_SQL = (
    "SELECT CASE WHEN opc.opcname LIKE 'halfvec%%' THEN 'halfvec' ELSE 'vector' END"
    "  FROM pg_index i JOIN pg_opclass opc ON opc.oid = i.indclass[0]"
    " WHERE i.indexrelid = to_regclass(%s)"
)


def precision_of(value: object) -> Precision:
    return "halfvec" if value == "halfvec" else "vector"


# A collection's own graph (ragfr.vector_index.graphs) indexes the NORMALIZED vectors: an expression the
# shared index does not have, so a walk ordered by it can only be answered by that graph. Ordered by the
# plain expression, the planner chose between the two graphs by its statistics, and the shared one (which
# every other collection shapes) moved a collection's top 10s until ANALYZE ran. The cosine distance is the
# same either way: normalizing only rescales.


def distance_to_query(
    column: sql.Composable, precision: Precision, dims: int, normalized: bool = False,
) -> sql.Composed:
    """`column <=> %s` in the index's precision: what an ORDER BY must say to be answered by the index
    (`normalized`: by a collection's own graph). The query vector is one `%s` parameter, a pgvector text
    literal."""
    d = sql.Literal(int(dims))
    cast = sql.SQL("halfvec" if precision == "halfvec" else "vector")
    if normalized:
        return sql.SQL("(l2_normalize({c}))::{t}({d}) <=> %s::{t}({d})").format(c=column, t=cast, d=d)
    if precision == "halfvec":
        return sql.SQL("({c})::halfvec({d}) <=> %s::halfvec({d})").format(c=column, d=d)
    return sql.SQL("{c} <=> %s::vector").format(c=column)


def index_expression(column: str, precision: Precision, dims: int, normalized: bool = False) -> sql.Composed:
    """The indexed expression with its operator class, for CREATE INDEX ... USING hnsw (<this>). The
    normalized one is cast back to its dimension, which l2_normalize's result lacks and HNSW needs."""
    c, d = sql.Identifier(column), sql.Literal(int(dims))
    if normalized:
        t = sql.SQL("halfvec" if precision == "halfvec" else "vector")
        return sql.SQL("((l2_normalize({c}))::{t}({d})) {t}_cosine_ops").format(c=c, t=t, d=d)
    if precision == "halfvec":
        return sql.SQL("(({c})::halfvec({d})) halfvec_cosine_ops").format(c=c, d=d)
    return sql.SQL("{c} vector_cosine_ops").format(c=c)
