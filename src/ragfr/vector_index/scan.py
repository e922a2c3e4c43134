"""A walk of the vector index: the session settings it runs under, the graph it can use, and the statements
that read the vectors (the vector arm, ragfr.retrieval.semantic, decides which and when).

pgvector's HNSW scan applies WHERE clauses after the graph walk: with `hnsw.iterative_scan=off` a 10%
filter returns about 10% of LIMIT. The walk sets, per transaction and logged with the result:
  hnsw.ef_search       pinned (reproducible candidate lists),
  hnsw.iterative_scan  relaxed_order (keep walking until LIMIT rows pass; the arm sorts them by their
                       full-precision distance itself, and relaxed_order finds more of the true nearest
                       passing rows, and faster, than strict_order at 10 % of 100k (measured once: the
                       dated log, `git show 71a1400:docs/benchmarks.md`, "relaxed_order"),
  hnsw.max_scan_tuples the budget; if it runs out first the arm reports underfill with counts.
A walk that no row can fail runs with the iterative scan off (`iterate=False`): its first batch is already
the answer.

With the half-precision index (migration 0011) the walk orders candidates by halfvec distance; each
candidate is then re-scored with its float32 vector (_HNSW), so the similarities the evidence gate and
fusion see are float32 cosines, as with the full-precision index.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from ragfr.filters.predicate import Filters
from ragfr.vector_index import graphs, precision
from ragfr.vector_index.precision import Precision

# Counts the passing rows (at most the cap) and, when they are few enough, scores them all. One row per
# scored candidate, or a single row with NULL id when nothing is scored; `n` is on every row. The CTE
# keeps each vector as a TOAST pointer: only the rows scored are read in full.
_EXACT = """
WITH passing AS MATERIALIZED (SELECT d.id, d.vector FROM document_chunk d WHERE {predicate} LIMIT %s),
     counted AS (SELECT count(*) AS n FROM passing)
SELECT counted.n, s.id, s.distance FROM counted LEFT JOIN LATERAL (
    SELECT p.id, p.vector <=> %s::vector AS distance FROM passing p
     WHERE counted.n <= %s AND p.vector IS NOT NULL
     ORDER BY distance, p.id LIMIT %s) s ON true
"""
# The walk's candidates, re-scored at full precision (a no-op difference for the full-precision index).
_HNSW = """
SELECT c.id, c.vector <=> %s::vector AS distance FROM (
    SELECT d.id, d.vector FROM document_chunk d WHERE {predicate} ORDER BY {order} LIMIT %s) c
"""


def vector_literal(vector: list[float]) -> str:
    """The query vector as pgvector text. pgvector holds float4: each value is rounded to float32 here and
    printed with 9 significant digits, which name one float32 exactly, so the server reads the same values
    as from repr() (the same vector for a float32 model's output; tested) from a third less text, built in
    less than half the time (timeit at 1024 dims: the dated log, `git show 71a1400:docs/benchmarks.md`,
    "Round trips per search")."""
    return "[" + ",".join(map("{:.9g}".format, np.asarray(vector, dtype=np.float32).tolist())) + "]"


# JIT compilation off for the search's statements. The planner's cost estimates of a filtered walk or a
# filter-first BM25 statement exceed jit_above_cost, and compiling their expressions took over a tenth of a
# filtered walk at 100k chunks (EXPLAIN ANALYZE: the dated log, `git show 71a1400:docs/benchmarks.md`, "JIT
# off"): a retrieval statement is short, the
# compilation is paid again by every query.
NO_JIT = "set_config('jit', 'off', true)"
ITERATIVE = "relaxed_order"


def apply_settings(
    conn: psycopg.Connection[Any], *, ef_search: int, max_scan_tuples: int, statement_timeout_ms: int,
) -> dict[str, Any]:
    """SET LOCAL the HNSW settings (the caller holds a transaction) and return them as applied (set_config
    returns the value now in force), with the live index's precision, in one round trip."""
    row = conn.execute(
        "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', '" + ITERATIVE + "', true),"
        " set_config('hnsw.max_scan_tuples', %s, true), set_config('statement_timeout', %s, true),"
        " (" + precision.PRECISION_SQL + "), " + NO_JIT,
        (str(ef_search), str(max_scan_tuples), f"{statement_timeout_ms}ms", precision.INDEX),
    ).fetchone()
    assert row is not None
    return {"ef_search": int(row[0]), "iterative_scan": row[1], "max_scan_tuples": int(row[2]),
            "statement_timeout": row[3], "vector_index": precision.precision_of(row[4]), "jit": row[5]}


def set_ef_search(conn: psycopg.Connection[Any], ef_search: int) -> None:
    """hnsw.ef_search for the rest of the transaction (a collection's own graph is walked at its own size)."""
    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search),))


# The searched collection's own graph, else the smallest declared filter index whose equality is one of the
# search's conditions, valid and of the shared index's shape (graphs.SAME_SHAPE). reltuples: the rows
# it held at its build or last VACUUM / ANALYZE.
_SHAPED = graphs.with_live_shape("JOIN")
_PAIRS = "(f.key, f.value) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
_COVERING = (f"SELECT f.index_name, greatest(c.reltuples, 0)::bigint, f.on_collection{_SHAPED}"
             f" WHERE (f.on_collection AND f.value = %s OR NOT f.on_collection AND {_PAIRS}) AND i.indisvalid"
             f" AND {graphs.SAME_SHAPE} ORDER BY f.on_collection DESC, 2, 1 LIMIT 1")


def covering_index(conn: psycopg.Connection[Any], filters: Filters) -> tuple[str, int, bool] | None:
    """(name, rows, is the collection's) of the graph the walk can use, or None; one round trip, and only
    for a search of one collection or with an equality condition."""
    one = filters.collections[0] if len(filters.collections) == 1 else None
    pairs = [(c.key, c.values[0]) for c in filters.conditions if c.op in ("eq", "in") and len(c.values) == 1]
    if one is None and not pairs:
        return None
    row = conn.execute(_COVERING, (one, [k for k, _ in pairs], [v for _, v in pairs])).fetchone()
    return None if row is None else (str(row[0]), int(row[1]), bool(row[2]))


def exact(
    conn: psycopg.Connection[Any], filters: Filters, literal: str, threshold: int, depth: int
) -> tuple[int, list[Any]]:
    """Count the passing rows (up to threshold + 1) and, if at most threshold pass, score them all:
    (passing, (id, distance) rows); no rows when more than `threshold` pass."""
    predicate, pparams = filters.predicate("d")
    # Not prepared: psycopg prepares a statement at its 5th run on a connection, and PostgreSQL then may keep
    # ONE generic plan for every collection. Planned for no collection in particular, it reads the whole table
    # (a sequential scan, where the collection index reads only its rows: docs/benchmarks.md#current-figures,
    # "several knowledge bases"), and a pooled connection that searched large collections first gives every
    # small one that plan.
    counted = conn.execute(
        sql.SQL(_EXACT).format(predicate=predicate), [*pparams, threshold + 1, literal, threshold, depth],
        prepare=False,
    ).fetchall()
    passing = int(counted[0][0])
    if passing > threshold:
        return passing, []
    return passing, [(r[1], r[2]) for r in counted if r[1] is not None]


def walk(
    conn: psycopg.Connection[Any], filters: Filters, vector: list[float], literal: str, precision_: Precision,
    depth: int, iterate: bool, restore: bool, on_collection: bool = False,
) -> list[Any]:
    """The graph's nearest `depth` passing rows, (id, full-precision distance). `on_collection`: ordered by
    the expression only the searched collection's own graph holds. `restore`: put back the planner settings
    the walk changes (enable_sort, hnsw.iterative_scan) afterwards."""
    predicate, pparams = filters.predicate("d")
    order = precision.distance_to_query(sql.SQL("d.vector"), precision_, len(vector), normalized=on_collection)
    # The strategy is decided: keep the planner on the index. On small tables it otherwise prefers
    # reading every passing row and sorting them, several times slower at 10k chunks (the dated log, `git
    # show 71a1400:docs/benchmarks.md`, "What dominates, measured").
    # Not prepared, so no cached plan outlives this setting.
    previous = conn.execute(
        "SELECT current_setting('enable_sort'), set_config('enable_sort', 'off', true),"
        " current_setting('hnsw.iterative_scan'), set_config('hnsw.iterative_scan', %s, true)",
        (ITERATIVE if iterate else "off",),
    ).fetchone()
    rows = conn.execute(
        sql.SQL(_HNSW).format(predicate=predicate, order=order), [literal, *pparams, literal, depth], prepare=False
    ).fetchall()
    if restore:
        conn.execute("SELECT set_config('enable_sort', %s, true), set_config('hnsw.iterative_scan', %s, true)",
                     (previous[0], previous[2]) if previous else ("on", ITERATIVE))
    return rows
