"""Checks that gate the switch: every chunk has a vector of the new model and dimension, and the new HNSW
index finds (nearly) what an exact search finds.

Recall@10 is measured on a deterministic sample of stored vectors used as queries: for each, the index
scan (seq scan disabled, so the planner cannot quietly answer exactly) is compared with an exact scan
(index scans disabled). A hit counts when its distance is within the exact 10th distance, so ties between
identical chunks do not count as misses. The plan is checked to really use the index: otherwise the
"recall" would be that of a sequential scan, 1.0 whatever the index.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import psycopg
from psycopg import sql

from ragfr.embmigrate import names
from ragfr.embmigrate.errors import VerificationError
from ragfr.vector_index import precision as vector_precision
from ragfr.vector_index import shape

K = 10
_TIE = 1e-6


@dataclass(frozen=True)
class Completeness:
    rows: int
    missing: int  # embeddable rows without a vector in the space
    no_text: int  # rows with NULL or empty text: nothing to embed
    wrong_model: int  # vectors recorded under another model

    @property
    def complete(self) -> bool:
        return self.missing == 0 and self.no_text == 0 and self.wrong_model == 0


def completeness(conn: psycopg.Connection, vector_col: str, model_col: str, model_id: str) -> Completeness:
    row = conn.execute(
        sql.SQL(
            "SELECT count(*),"
            " count(*) FILTER (WHERE {v} IS NULL AND text IS NOT NULL AND text <> ''),"
            " count(*) FILTER (WHERE text IS NULL OR text = ''),"
            " count(*) FILTER (WHERE {v} IS NOT NULL AND {m} IS DISTINCT FROM %s)"
            " FROM {t}"
        ).format(t=sql.Identifier(names.TABLE), v=sql.Identifier(vector_col), m=sql.Identifier(model_col)),
        (model_id,),
    ).fetchone()
    assert row is not None
    return Completeness(*(int(x) for x in row))


@dataclass(frozen=True)
class Recall:
    mean: float
    worst: float
    sample: int
    ef_search: int


def recall_at_10(
    conn: psycopg.Connection, vector_col: str, index_name: str, *, sample: int, ef_search: int
) -> Recall:
    """Mean recall@10 of the index against exact search over `sample` stored vectors (autocommit conn)."""
    t, v = sql.Identifier(names.TABLE), sql.Identifier(vector_col)
    queries = [
        str(r[0])
        for r in conn.execute(
            sql.SQL("SELECT {v}::text FROM {t} WHERE {v} IS NOT NULL ORDER BY md5(id) LIMIT %s").format(t=t, v=v),
            (sample,),
        )
    ]
    if not queries:
        return Recall(mean=1.0, worst=1.0, sample=0, ef_search=ef_search)
    idx = shape.index(conn, index_name)
    precision = idx.precision if idx is not None else "vector"
    col = shape.column(conn, vector_col)
    dims = col.dims if col is not None and col.dims > 0 else len(queries[0].split(","))
    # The index's own distance orders the walk (a half-precision index answers only a halfvec ORDER BY);
    # every distance compared is the full-precision one, as ragfr's vector arm reports it.
    knn = sql.SQL(
        "SELECT {v} <=> %s::vector FROM {t} WHERE {v} IS NOT NULL ORDER BY {order} LIMIT %s"
    ).format(t=t, v=v, order=vector_precision.distance_to_query(v, precision, dims))
    exact_knn = sql.SQL(
        "SELECT {v} <=> %s::vector FROM {t} WHERE {v} IS NOT NULL ORDER BY {v} <=> %s::vector LIMIT %s"
    ).format(t=t, v=v)
    scores = []
    for i, q in enumerate(queries):
        with conn.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search),))
            if i == 0:
                _require_index_plan(conn, knn, q, index_name)
            approx = [float(r[0]) for r in conn.execute(knn, (q, q, K))]
        with conn.transaction():
            conn.execute("SET LOCAL enable_indexscan = off")
            conn.execute("SET LOCAL enable_bitmapscan = off")
            exact = [float(r[0]) for r in conn.execute(exact_knn, (q, q, K))]
        bound = exact[-1] + _TIE
        scores.append(sum(1 for d in approx if d <= bound) / len(exact))
    return Recall(mean=sum(scores) / len(scores), worst=min(scores), sample=len(scores), ef_search=ef_search)


def _require_index_plan(conn: psycopg.Connection, knn: sql.Composed, q: str, index_name: str) -> None:
    row = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + knn, (q, q, K)).fetchone()
    assert row is not None
    plan = row[0] if isinstance(row[0], (list, dict)) else json.loads(row[0])
    if f'"Index Name": "{index_name}"' not in json.dumps(plan):
        raise VerificationError(f"the planner does not use {index_name} for nearest-neighbour scans")
