"""The vector arm: cosine similarity on the HNSW index, with filters that never shrink the answer silently.

pgvector's HNSW scan applies WHERE clauses after the graph walk: with `hnsw.iterative_scan=off` a 10%
filter returns about 10% of LIMIT. We set, per transaction and logged with the result:
  hnsw.ef_search       pinned (reproducible candidate lists),
  hnsw.iterative_scan  strict_order (keep walking until LIMIT rows pass, in exact distance order),
  hnsw.max_scan_tuples the budget; if it runs out first the arm reports underfill with counts.
When few rows pass the filters (at most `exact_threshold`), they are scored exactly instead: the filter
runs first (one scan that also counts them) and every passing row is ranked by primary key. Without
metadata conditions the collections' row count (kept by the BM25 triggers) decides, with no scan at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.filters import Filters
from ragfr.retrieval.types import ArmReport

_PASSING_IDS = "SELECT d.id FROM document_chunk d WHERE {predicate} LIMIT %s"
_EXACT_BY_ID = """
SELECT id, vector <=> %s::vector AS distance FROM document_chunk
 WHERE id = ANY(%s) AND vector IS NOT NULL
 ORDER BY distance, id LIMIT %s
"""
_EXACT = """
WITH passing AS MATERIALIZED (SELECT d.id, d.vector FROM document_chunk d WHERE {predicate})
SELECT id, vector <=> %s::vector AS distance FROM passing WHERE vector IS NOT NULL
 ORDER BY distance, id LIMIT %s
"""
_HNSW = """
SELECT d.id, d.vector <=> %s::vector AS distance FROM document_chunk d
 WHERE {predicate} ORDER BY d.vector <=> %s::vector LIMIT %s
"""


@dataclass(frozen=True)
class SemanticCandidate:
    id: str
    similarity: float


def vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def apply_settings(conn: psycopg.Connection[Any], config: SearchConfig) -> dict[str, Any]:
    """SET LOCAL the HNSW settings (the caller holds a transaction) and return them as applied (set_config
    returns the value now in force), in one round trip."""
    row = conn.execute(
        "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'strict_order', true),"
        " set_config('hnsw.max_scan_tuples', %s, true), set_config('statement_timeout', %s, true)",
        (str(config.ef_search), str(config.max_scan_tuples), f"{config.statement_timeout_ms}ms"),
    ).fetchone()
    assert row is not None
    return {"ef_search": int(row[0]), "iterative_scan": row[1], "max_scan_tuples": int(row[2]),
            "statement_timeout": row[3]}


def nearest(
    conn: psycopg.Connection[Any], vector: list[float], filters: Filters, config: SearchConfig, searched: int
) -> tuple[list[SemanticCandidate], ArmReport]:
    depth = config.semantic_depth
    report = ArmReport("semantic", depth, searched=searched)
    predicate, pparams = filters.predicate("d")
    literal = vector_literal(vector)
    threshold = max(config.exact_threshold, depth)
    rows: list[Any] = []
    if not filters.conditions and searched > threshold:
        # The collections alone hold more rows than the threshold (rows without a vector count too, so a
        # collection of mostly unembedded rows could report an underfill that is really a shortage).
        small = False
    elif not filters.conditions:
        small = True
        report.strategy = "exact"
        rows = conn.execute(sql.SQL(_EXACT).format(predicate=predicate), [*pparams, literal, depth]).fetchall()
        report.passing = len(rows) if len(rows) < depth else None
    else:
        ids = [r[0] for r in conn.execute(
            sql.SQL(_PASSING_IDS).format(predicate=predicate), [*pparams, threshold + 1]).fetchall()]
        small = len(ids) <= threshold
        if small:
            report.strategy, report.passing = "exact", len(ids)
            rows = conn.execute(_EXACT_BY_ID, [literal, ids, depth]).fetchall()
    if not small:
        report.strategy = "hnsw"
        # The strategy is decided: keep the planner on the index. On small tables it otherwise prefers
        # reading every passing row and sorting them (62-68 ms vs 10 ms at 10k chunks, docs/benchmarks.md).
        # Not prepared, so no cached plan outlives this setting.
        previous = conn.execute(
            "SELECT current_setting('enable_sort'), set_config('enable_sort', 'off', true)"
        ).fetchone()
        rows = conn.execute(
            sql.SQL(_HNSW).format(predicate=predicate), [literal, *pparams, literal, depth], prepare=False
        ).fetchall()
        conn.execute("SELECT set_config('enable_sort', %s, true)", (previous[0] if previous else "on",))
        # The index returns distance order; ids break exact ties so equal distances always list alike.
        rows.sort(key=lambda r: (r[1], r[0]))
    candidates = [SemanticCandidate(r[0], 1.0 - float(r[1])) for r in rows]
    if config.similarity_floor is not None:
        kept = [c for c in candidates if c.similarity >= config.similarity_floor]
        report.floor_cut = len(candidates) - len(kept)
        candidates = kept
    report.returned = len(candidates)
    if report.strategy == "hnsw" and len(rows) < depth and report.floor_cut == 0:
        # More than max(exact_threshold, depth) rows pass, yet the scan stopped short: the budget ran out.
        report.underfilled = True
        report.reason = (
            f"semantic arm returned {len(rows)} of {depth}; scanned {config.max_scan_tuples} "
            f"(hnsw.max_scan_tuples) of {searched} rows in the searched collections, and more than "
            f"{threshold} rows pass the filters"
        )
    return candidates, report
