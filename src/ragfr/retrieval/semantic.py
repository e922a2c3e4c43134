"""The vector arm: cosine similarity on the HNSW index, with filters that never shrink the answer silently.

A search over collections that hold at most `collection_exact_rows` chunks in all (most knowledge bases)
scores every one of their vectors exactly: its answer depends on those collections' rows alone, whatever
the other collections in the one shared graph hold (the report's scope "collections"). Above it, two
strategies, chosen per query by estimated cost (ragfr.retrieval.strategy) and recorded in the arm's
report:
  exact  the filter runs first (one statement that also counts the passing rows, capped at the cost rule's
         threshold + 1) and every passing row is scored with the full-precision vectors;
  hnsw   the graph walk, when more rows pass than the threshold.
The walk runs under pinned HNSW session settings (ef_search, the iterative scan, a scan budget) and
its statements are the vector index's (ragfr.vector_index.scan).
A walk that no row can fail (no metadata condition, the searched collections are the whole graph, and
ef_search >= depth) runs with the iterative scan off: its first batch is already the answer, and the
iterative scan's bookkeeping of discarded candidates cost a sixth of the walk at 1M chunks, ef_search 200,
with the same 50 rows for every bench question (a one-off profile: the dated log, `git show
71a1400:docs/benchmarks.md`, "ef_search auto and the single-batch walk"). Should it come back short all
the same (rows of another embedding model in the graph), it is walked again iteratively.
Without metadata conditions the collections' row count (kept by the BM25 triggers) decides, with no scan.

A search of one collection larger than that walks the collection's own graph, a partial index over its
rows that `ragfr filter-index sync` builds by itself for every collection above collection_exact_rows
(ragfr.vector_index.graphs, migration 0016): what other collections hold or receive cannot change that walk,
and its ef_search follows the collection's size, not the database's (scope "collection graph"). Until the
graph is built, the walk is the shared graph's (scope "shared graph").

Several collections searched together, more than collection_exact_rows chunks in all (a chat with several
knowledge bases attached), are searched one by one, each as if it were searched alone (exact below the limit,
its own graph above it), and their candidates merged by distance, ties by id (scope "per collection", each
collection's own report in `parts`): one walk of the shared graph for all of them would be shaped by every
other collection in the database. A part that had to walk the shared graph (its graph not built yet) names
that scope instead, so the report never claims an isolation the walk did not have.

A declared filter (`ragfr filter-index add key=value`, ragfr.vector_index.graphs) has its own graph, a
partial index over the rows it passes. A search with that equality walks it (the planner proves the
query's rows are all in it), so the walk is as short as an unfiltered one over a graph of that size: the
cost rule sizes it by that graph's rows, and with that one condition over every collection no row of the
walk can fail it (single batch, as above). The arm reports the index (`filter_index`).

With the half-precision index (migration 0011) the walk orders candidates by halfvec distance; each
candidate is then re-scored with its float32 vector, so the similarities the evidence gate and fusion see
are float32 cosines, as with the full-precision index, and ties are broken by id on those.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import psycopg

from ragfr.filters.predicate import Filters
from ragfr.retrieval import estimate, strategy
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.types import ArmReport
from ragfr.vector_index import scan
from ragfr.vector_index.precision import Precision
from ragfr.vector_index.scan import ITERATIVE, NO_JIT, vector_literal

__all__ = ["NO_JIT", "SemanticCandidate", "apply_settings", "nearest", "threshold_for", "vector_literal"]


@dataclass(frozen=True)
class SemanticCandidate:
    id: str
    similarity: float


def apply_settings(conn: psycopg.Connection[Any], config: SearchConfig, indexed: int) -> dict[str, Any]:
    """SET LOCAL the HNSW settings of `config` (the caller holds a transaction) and return them as applied,
    with the live index's precision, in one round trip (ragfr.vector_index.scan). `indexed`: rows in the
    graph, which set ef_search when the config leaves it to the size rule."""
    applied = scan.apply_settings(conn, ef_search=config.ef_search_at(indexed),
                                  max_scan_tuples=config.max_scan_tuples,
                                  statement_timeout_ms=config.statement_timeout_ms)
    rule = "pinned" if config.ef_search is not None else "graph size"
    return {"ef_search": applied.pop("ef_search"), "ef_search_rule": rule, **applied}


def threshold_for(config: SearchConfig, indexed: int) -> int:
    """Most passing rows that are scored exactly: pinned by `exact_threshold`, else the cost rule."""
    if config.exact_threshold is not None:
        return max(config.exact_threshold, config.semantic_depth)
    return strategy.exact_threshold(indexed, config.semantic_depth, config.ef_search_at(indexed),
                                    config.exact_cost_ratio)


@dataclass
class _Plan:
    """What the arm decided before reading a row: the graph that sizes the walk and the exact threshold."""

    isolated: bool  # every row of the searched collections is scored (their size is at most collection_exact_rows)
    own: tuple[str, int, bool] | None  # the covering graph (name, rows, is the collection's), if any
    graph: int  # rows of the graph the walk's share of waste is measured on
    threshold: int
    count_first: bool  # count (and score) the passing rows before any walk

    @property
    def on_collection(self) -> bool:
        return self.own is not None and self.own[2]


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
    indexed = searched if indexed is None else indexed
    if config.exact_threshold is None and len(set(filters.collections)) > 1 \
            and searched > config.collection_exact_rows:
        return _per_collection(conn, vector, filters, config, searched, indexed, precision, restore)
    depth = config.semantic_depth
    report = ArmReport("semantic", depth, searched=searched)
    literal = vector_literal(vector)
    plan = _plan(conn, filters, config, searched, indexed, report)
    rows: list[Any] = []
    small = False
    if plan.count_first:
        small, rows = _exact(conn, filters, literal, plan.threshold, depth, report)
        if small:
            report.scope = "collections" if plan.isolated else "filter"
    if not small:
        rows = _walk_graph(conn, filters, config, vector, literal, plan, searched, precision, restore, report)
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
            f"{plan.threshold} rows pass the filters"
        )
    return candidates, report


# Scopes whose answer nothing outside the searched collection can change.
_ISOLATED = frozenset({"collections", "collection graph", "filter"})


def _per_collection(
    conn: psycopg.Connection[Any], vector: list[float], filters: Filters, config: SearchConfig, searched: int,
    indexed: int, precision: Precision, restore: bool,
) -> tuple[list[SemanticCandidate], ArmReport]:
    """Each collection searched alone, the candidates merged (module docstring)."""
    names = list(dict.fromkeys(filters.collections))
    counts = dict(conn.execute(
        "SELECT collection_name, n_docs FROM ragfr_collection_stats WHERE collection_name = ANY(%s)", (names,)
    ).fetchall())
    shared_ef = config.ef_search_at(indexed)
    merged: list[SemanticCandidate] = []
    parts: list[dict[str, Any]] = []
    for i, name in enumerate(names):
        last = i == len(names) - 1
        found, part = nearest(conn, vector, replace(filters, collections=(name,)), config, int(counts.get(name, 0)),
                              indexed=indexed, precision=precision, restore=restore or not last)
        if part.ef_search is not None and not last:
            scan.set_ef_search(conn, shared_ef)  # the next part walks at its own size, or the shared graph's
        merged.extend(found)
        own = {k: v for k, v in asdict(part).items() if k not in ("name", "depth", "parts")}
        parts.append({"collection": name, **own})
    # The order one search over their union gives: nearest first, ties by id.
    merged.sort(key=lambda c: (-c.similarity, c.id))
    depth = config.semantic_depth
    report = ArmReport("semantic", depth, searched=searched, returned=min(depth, len(merged)), parts=parts)
    report.strategy = "hnsw" if any(p["strategy"] == "hnsw" for p in parts) else "exact"
    report.scope = next((p["scope"] for p in parts if p["scope"] not in _ISOLATED), "per collection")
    report.floor_cut = sum(p["floor_cut"] for p in parts)
    short = [p for p in parts if p["underfilled"]]
    if short:
        report.underfilled = True
        report.reason = "; ".join(f"{p['collection']}: {p['reason']}" for p in short)
    return merged[:depth], report


def _plan(conn: psycopg.Connection[Any], filters: Filters, config: SearchConfig, searched: int, graph: int,
          report: ArmReport) -> _Plan:
    # Small enough to score every row of the searched collections: the answer then depends on their rows
    # alone, never on what else the shared graph holds (nor on its size, which moves the cost rule). A
    # pinned exact_threshold pins the whole choice (what tests and benchmarks use to force one strategy).
    isolated = config.exact_threshold is None and searched <= config.collection_exact_rows
    # The collection's own graph, else a declared filter's, holds every row these filters can pass: the
    # planner walks it (its predicate is implied by the query's), so the walk's length and the cost rule
    # follow its size. No walk follows an isolated search: no round trip to look for one.
    own = None if isolated else scan.covering_index(conn, filters)
    if own is not None:
        report.filter_index, report.filter_index_rows = own[0], own[1]
    threshold = threshold_for(config, graph if own is None else own[1])
    if isolated:
        threshold = max(threshold, config.collection_exact_rows)
    report.threshold = threshold
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
    return _Plan(isolated, own, graph, threshold, count_first)


def _walk_graph(
    conn: psycopg.Connection[Any], filters: Filters, config: SearchConfig, vector: list[float], literal: str,
    plan: _Plan, searched: int, precision: Precision, restore: bool, report: ArmReport,
) -> list[Any]:
    """The HNSW strategy: the walk of the covering (or shared) graph, iterative unless no row can fail."""
    depth, own, on_collection, graph = config.semantic_depth, plan.own, plan.on_collection, plan.graph
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
        scan.set_ef_search(conn, report.ef_search)
        graph = searched
    # ef_search stays the whole graph's (set with the other settings), also on a declared filter's
    # smaller graph: at 1M, the size rule's 100 for the 100k-row graph of a 10 % filter gave filtered
    # recall below the shared graph's filtered walk (docs/benchmarks.md#declared-filters).
    iterate = not (every_row_passes and config.ef_search_at(graph) >= depth)
    rows = scan.walk(conn, filters, vector, literal, precision, depth, iterate, restore, on_collection)
    if not iterate and len(rows) < depth:
        iterate = True
        rows = scan.walk(conn, filters, vector, literal, precision, depth, iterate, restore, on_collection)
    report.iterative_scan = ITERATIVE if iterate else "off"
    if len(rows) < depth and not plan.count_first:
        # The estimate said many rows pass, yet the walk came back short: fewer may pass than it
        # thought. Count and score them before calling anything an underfill.
        small, exact_rows = _exact(conn, filters, literal, plan.threshold, depth, report)
        if small:
            rows, report.scope = exact_rows, "filter"
    return rows


def _exact(
    conn: psycopg.Connection[Any], filters: Filters, literal: str, threshold: int, depth: int, report: ArmReport
) -> tuple[bool, list[Any]]:
    """(scored, rows) of ragfr.vector_index.scan.exact; records the strategy and count in `report` when it
    scores."""
    passing, rows = scan.exact(conn, filters, literal, threshold, depth)
    if passing > threshold:
        return False, []
    report.strategy, report.passing = "exact", passing
    return True, rows
