"""The lexical arm: French BM25 matching ANY significant query term.

Stock Open WebUI asks `plainto_tsquery('simple', q)`: every word of a natural question must occur, so
questions match nothing. Here a chunk is a candidate when it holds at least one query lexeme (OR), and
candidates are ranked by Okapi BM25 with the per-collection statistics of migrations/0005, all kept exact
by triggers. The scans are the lexical index's (ragfr.lexical_index.scan); this arm chooses one. Without
metadata conditions the postings come from the compact block index of migrations/0010, read with block-max
early termination, and the best candidates are walked through the hard-filter predicate until `depth`
pass. With metadata conditions that few rows pass, the filter runs first instead and the survivors are
scored from their tsvectors (same scores); the planner's estimate of the passing rows decides, by the cost
rule of ragfr.retrieval.strategy. The arm is exact either way: it returns fewer than `depth` rows only
when fewer match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from ragfr.filters.predicate import Filters
from ragfr.lexical_index import scan
from ragfr.retrieval import estimate, strategy
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.types import ArmReport


@dataclass(frozen=True)
class LexicalCandidate:
    id: str
    score: float


def bm25(
    conn: psycopg.Connection[Any], terms: list[str], filters: Filters, config: SearchConfig,
    searched: int | None = None,
) -> tuple[list[LexicalCandidate], ArmReport]:
    """The arm's top `lexical_depth`. `searched`: rows in the searched collections (the cost rule's N),
    read from the collection statistics when not given.
    Strategies in the report: "bm25" (block index, walked through the filters when there are conditions),
    "bm25-filter-first", "ts_rank_cd"."""
    report = ArmReport("lexical", config.lexical_depth, strategy=config.lexical_ranking)
    if not terms:
        report.reason = "no significant query term (only stop words or punctuation)"
        return [], report
    if config.lexical_ranking == "ts_rank_cd":
        rows = scan.ts_rank_cd(conn, terms, filters, config)
    elif filters.conditions and _filter_first(conn, filters, config, searched, report):
        report.strategy = "bm25-filter-first"
        rows = scan.bm25_filter_first(conn, terms, filters, config)
    else:
        rows = scan.bm25_blocks(conn, terms, filters, config)
    report.returned = len(rows)
    return [LexicalCandidate(r[0], float(r[1])) for r in rows], report


def _filter_first(
    conn: psycopg.Connection[Any], filters: Filters, config: SearchConfig, searched: int | None,
    report: ArmReport,
) -> bool:
    """Whether few enough rows pass `filters` to score them first (ragfr.retrieval.strategy). Without an
    estimate (range conditions) the filter runs first: its cost is bounded by the passing rows, while a walk
    through a filter that passes almost nothing would probe every matching chunk."""
    if searched is None:
        row = conn.execute(
            "SELECT coalesce(sum(n_docs), 0) FROM ragfr_collection_stats WHERE collection_name = ANY(%s)",
            (list(filters.collections),),
        ).fetchone()
        searched = int(row[0]) if row else 0
    report.threshold = strategy.lexical_filter_first_threshold(
        searched, config.lexical_depth, config.lexical_probe_cost_ratio)
    report.estimated = estimate.passing_rows(conn, filters)
    return report.estimated is None or report.estimated <= report.threshold
