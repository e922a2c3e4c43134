"""The vector arm: cosine similarity on the HNSW index, with filters that never shrink the answer silently.

A search over collections that hold at most `collection_exact_rows` chunks in all (most knowledge bases)
scores every one of their vectors exactly: its answer depends on those collections' rows alone, whatever
the other collections in the one shared graph hold (the report's scope "collections"). Above it, two
strategies, chosen per query by estimated cost (ragfr.retrieval.strategy) and recorded in the arm's
report:
  exact  the filter runs first (one statement that also counts the passing rows, capped at the cost rule's
         threshold + 1) and every passing row is scored with the full-precision vectors;
  hnsw   the graph walk, when more rows pass than the threshold.
pgvector's HNSW scan applies WHERE clauses after the graph walk: with `hnsw.iterative_scan=off` a 10%
filter returns about 10% of LIMIT. We set, per transaction and logged with the result:
  hnsw.ef_search       pinned (reproducible candidate lists),
  hnsw.iterative_scan  relaxed_order (keep walking until LIMIT rows pass; the arm sorts them by their
                       full-precision distance itself, and relaxed_order finds more of the true nearest
                       passing rows, and faster, than strict_order at 10 % of 100k (measured once: the
                       dated log, `git show 71a1400:docs/benchmarks.md`, "relaxed_order"),
  hnsw.max_scan_tuples the budget; if it runs out first the arm reports underfill with counts.
A walk that no row can fail (no metadata condition, the searched collections are the whole graph, and
ef_search >= depth) runs with the iterative scan off: its first batch is already the answer, and the
iterative scan's bookkeeping of discarded candidates cost a sixth of the walk at 1M chunks, ef_search 200,
with the same 50 rows for every bench question (a one-off profile: the dated log, `git show
71a1400:docs/benchmarks.md`, "ef_search auto and the single-batch walk"). Should it come back short all
the same (rows of another embedding model in the graph), it is walked again iteratively.
Without metadata conditions the collections' row count (kept by the BM25 triggers) decides, with no scan.

A search of one collection larger than that walks the collection's own graph, a partial index over its
rows that `ragfr filter-index sync` builds by itself for every collection above collection_exact_rows
(ragfr.db.filter_indexes, migration 0016): what other collections hold or receive cannot change that walk,
and its ef_search follows the collection's size, not the database's (scope "collection graph"). Until the
graph is built, or for several collections at once, the walk is the shared graph's (scope "shared graph").

A declared filter (`ragfr filter-index add key=value`, ragfr.db.filter_indexes) has its own graph, a
partial index over the rows it passes. A search with that equality walks it (the planner proves the
query's rows are all in it), so the walk is as short as an unfiltered one over a graph of that size: the
cost rule sizes it by that graph's rows, and with that one condition over every collection no row of the
walk can fail it (single batch, as above). The arm reports the index (`filter_index`).

With the half-precision index (migration 0011) the walk orders candidates by halfvec distance; each
candidate is then re-scored with its float32 vector, so the similarities the evidence gate and fusion see
are float32 cosines, as with the full-precision index, and ties are broken by id on those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from ragfr.db import filter_indexes, vector_index
from ragfr.db.vector_index import Precision
from ragfr.filters.predicate import Filters
from ragfr.retrieval import estimate, strategy
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.types import ArmReport

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


@dataclass(frozen=True)
class SemanticCandidate:
    id: str
    similarity: float


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


def apply_settings(conn: psycopg.Connection[Any], config: SearchConfig, indexed: int) -> dict[str, Any]:
    """SET LOCAL the HNSW settings (the caller holds a transaction) and return them as applied (set_config
    returns the value now in force), with the live index's precision, in one round trip. `indexed`: rows
    in the graph, which set ef_search when the config leaves it to the size rule."""
    row = conn.execute(
        "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', '" + ITERATIVE + "', true),"
        " set_config('hnsw.max_scan_tuples', %s, true), set_config('statement_timeout', %s, true),"
        " (" + vector_index.PRECISION_SQL + "), " + NO_JIT,
        (str(config.ef_search_at(indexed)), str(config.max_scan_tuples), f"{config.statement_timeout_ms}ms",
         vector_index.INDEX),
    ).fetchone()
    assert row is not None
    return {"ef_search": int(row[0]), "ef_search_rule": "pinned" if config.ef_search is not None else "graph size",
            "iterative_scan": row[1], "max_scan_tuples": int(row[2]),
            "statement_timeout": row[3], "vector_index": vector_index.precision_of(row[4]), "jit": row[5]}


def threshold_for(config: SearchConfig, indexed: int) -> int:
    """Most passing rows that are scored exactly: pinned by `exact_threshold`, else the cost rule."""
    if config.exact_threshold is not None:
        return max(config.exact_threshold, config.semantic_depth)
    return strategy.exact_threshold(indexed, config.semantic_depth, config.ef_search_at(indexed),
                                    config.exact_cost_ratio)


def nearest(
    conn: psycopg.Connection[Any],
    vector: list[float],
    filters: Filters,
    config: SearchConfig,
    searched: int,
    *,
    indexed: int | None = None,
    precision: Precision = "vector",
    restore: bool = True,
) -> tuple[list[SemanticCandidate], ArmReport]:
    """`searched`: rows in the searched collections; `indexed`: rows in the whole graph (every collection),
    which sets the share of the walk a filter wastes (default: `searched`). `restore`: put back the
    planner settings the walk changes (enable_sort, hnsw.iterative_scan) afterwards; a caller that ends
    the transaction right after, with no sorting statement, can skip that round trip."""
    depth = config.semantic_depth
    report = ArmReport("semantic", depth, searched=searched)
    literal = vector_literal(vector)
    graph = searched if indexed is None else indexed
    # Small enough to score every row of the searched collections: the answer then depends on their rows
    # alone, never on what else the shared graph holds (nor on its size, which moves the cost rule). A
    # pinned exact_threshold pins the whole choice (what tests and benchmarks use to force one strategy).
    isolated = config.exact_threshold is None and searched <= config.collection_exact_rows
    # The collection's own graph, else a declared filter's, holds every row these filters can pass: the
    # planner walks it (its predicate is implied by the query's), so the walk's length and the cost rule
    # follow its size. No walk follows an isolated search: no round trip to look for one.
    own = None if isolated else covering_index(conn, filters)
    on_collection = own is not None and own[2]
    if own is not None:
        report.filter_index, report.filter_index_rows = own[0], own[1]
    sized_by = graph if own is None else own[1]
    threshold = threshold_for(config, sized_by)
    if isolated:
        threshold = max(threshold, config.collection_exact_rows)
    report.threshold = threshold
    rows: list[Any] = []
    # With metadata conditions the planner's estimate of the passing rows decides first, for the price of
    # planning one statement: counting them means reading each one (random heap reads, as costly as a walk
    # near the threshold). Without conditions the collections' row count decides, with no scan at all
    # (rows without a vector count too, so a collection of mostly unembedded rows could report an underfill
    # that is really a shortage).
    if isolated:
        count_first = True
    elif filters.conditions:
        report.estimated = estimate.passing_rows(conn, filters)
        count_first = report.estimated is None or report.estimated <= threshold
    else:
        count_first = searched <= threshold
    small = False
    if count_first:
        small, rows = _exact(conn, filters, literal, threshold, depth, report)
        if small:
            report.scope = "collections" if isolated else "filter"
    if not small:
        report.strategy = "hnsw"
        report.scope = "shared graph" if own is None else "collection graph" if on_collection else "filter graph"
        # No row of the walked graph can fail the filters: no condition on the collection's graph or on the
        # shared graph (every collection searched), or only the declared filter's own condition on its graph.
        every_row_passes = (not filters.conditions) if on_collection else graph == searched and (
            not filters.conditions or (own is not None and len(filters.conditions) == 1))
        if on_collection:
            # Sized by the collection alone: the size rule over the whole database would move it when
            # another collection grows past a tier. A pinned ef_search stays pinned.
            report.ef_search = config.ef_search_at(searched)
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(report.ef_search),))
            graph = searched
        # ef_search stays the whole graph's (set with the other settings), also on a declared filter's
        # smaller graph: at 1M, the size rule's 100 for the 100k-row graph of a 10 % filter gave filtered
        # recall below the shared graph's filtered walk (docs/benchmarks.md#declared-filters).
        iterate = not (every_row_passes and config.ef_search_at(graph) >= depth)
        rows = _walk(conn, filters, vector, literal, precision, depth, iterate, restore, on_collection)
        if not iterate and len(rows) < depth:
            iterate = True
            rows = _walk(conn, filters, vector, literal, precision, depth, iterate, restore, on_collection)
        report.iterative_scan = ITERATIVE if iterate else "off"
        if len(rows) < depth and not count_first:
            # The estimate said many rows pass, yet the walk came back short: fewer may pass than it
            # thought. Count and score them before calling anything an underfill.
            small, exact_rows = _exact(conn, filters, literal, threshold, depth, report)
            if small:
                rows, report.scope = exact_rows, "filter"
    # Full-precision distance order; ids break exact ties so equal distances always list alike.
    rows.sort(key=lambda r: (r[1], r[0]))
    candidates = [SemanticCandidate(r[0], 1.0 - float(r[1])) for r in rows]
    if config.similarity_floor is not None:
        kept = [c for c in candidates if c.similarity >= config.similarity_floor]
        report.floor_cut = len(candidates) - len(kept)
        candidates = kept
    report.returned = len(candidates)
    if report.strategy == "hnsw" and len(rows) < depth and report.floor_cut == 0:
        # More than max(threshold, depth) rows pass, yet the scan stopped short: the budget ran out.
        report.underfilled = True
        report.reason = (
            f"semantic arm returned {len(rows)} of {depth}; scanned {config.max_scan_tuples} "
            f"(hnsw.max_scan_tuples) of {searched} rows in the searched collections, and more than "
            f"{threshold} rows pass the filters"
        )
    return candidates, report


# The searched collection's own graph, else the smallest declared filter index whose equality is one of the
# search's conditions, valid and of the shared index's shape (filter_indexes.SAME_SHAPE). reltuples: the rows
# it held at its build or last VACUUM / ANALYZE.
_SHAPED = filter_indexes.with_live_shape("JOIN")
_PAIRS = "(f.key, f.value) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
_COVERING = (f"SELECT f.index_name, greatest(c.reltuples, 0)::bigint, f.on_collection{_SHAPED}"
             f" WHERE (f.on_collection AND f.value = %s OR NOT f.on_collection AND {_PAIRS}) AND i.indisvalid"
             f" AND {filter_indexes.SAME_SHAPE} ORDER BY f.on_collection DESC, 2, 1 LIMIT 1")


def covering_index(conn: psycopg.Connection[Any], filters: Filters) -> tuple[str, int, bool] | None:
    """(name, rows, is the collection's) of the graph the walk can use, or None; one round trip, and only
    for a search of one collection or with an equality condition."""
    one = filters.collections[0] if len(filters.collections) == 1 else None
    pairs = [(c.key, c.values[0]) for c in filters.conditions if c.op in ("eq", "in") and len(c.values) == 1]
    if one is None and not pairs:
        return None
    row = conn.execute(_COVERING, (one, [k for k, _ in pairs], [v for _, v in pairs])).fetchone()
    return None if row is None else (str(row[0]), int(row[1]), bool(row[2]))


def _exact(
    conn: psycopg.Connection[Any], filters: Filters, literal: str, threshold: int, depth: int, report: ArmReport
) -> tuple[bool, list[Any]]:
    """Count the passing rows (up to threshold + 1) and, if at most threshold pass, score them all:
    (scored, rows). Records the strategy and count in `report` when it scores."""
    predicate, pparams = filters.predicate("d")
    counted = conn.execute(
        sql.SQL(_EXACT).format(predicate=predicate), [*pparams, threshold + 1, literal, threshold, depth]
    ).fetchall()
    passing = int(counted[0][0])
    if passing > threshold:
        return False, []
    report.strategy, report.passing = "exact", passing
    return True, [(r[1], r[2]) for r in counted if r[1] is not None]


def _walk(
    conn: psycopg.Connection[Any], filters: Filters, vector: list[float], literal: str, precision: Precision,
    depth: int, iterate: bool, restore: bool, on_collection: bool = False,
) -> list[Any]:
    """`on_collection`: ordered by the expression only the searched collection's own graph holds."""
    predicate, pparams = filters.predicate("d")
    order = vector_index.distance_to_query(sql.SQL("d.vector"), precision, len(vector), normalized=on_collection)
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
