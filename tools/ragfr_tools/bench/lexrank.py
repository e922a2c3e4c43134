"""Cost of ranking the lexical arm's candidates: BM25 (ragfr's rule) vs `ts_rank_cd`, and what dominates.

For each query, on the same OR candidate set (chunks holding at least one query lexeme, same hard-filter
predicate), three statements are timed in turn:
- `match only`: counting the candidates (GIN lookup + reading each candidate), no ranking: the floor;
- `ts_rank_cd`: PostgreSQL's cover-density rank over the stored French tsvector, top `depth`;
- `BM25`: `ragfr.retrieval.lexical.bm25` itself, top `depth`.
The number of candidates per query is reported too: with OR semantics a question's common words match a
large share of the corpus, and every candidate must be scored.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
from psycopg import sql
from tqdm import tqdm

from ragfr.analysis.french import query_terms
from ragfr.embed.space import read_space
from ragfr.filters.predicate import Filters
from ragfr.retrieval import lexical
from ragfr.retrieval.config import SearchConfig
from ragfr.timing import elapsed_ms
from ragfr_tools.bench.corpus import COLLECTION
from ragfr_tools.bench.queries import QuerySet
from ragfr_tools.bench.stats import load_average, summarize

_COUNT = "SELECT count(*) FROM document_chunk d WHERE d.fts @@ %s::tsquery AND {predicate}"
_TS_RANK_CD = """
SELECT d.id, ts_rank_cd(d.fts, %s::tsquery) AS score FROM document_chunk d
 WHERE d.fts @@ %s::tsquery AND {predicate} ORDER BY score DESC, d.id LIMIT %s
"""


def or_tsquery(terms: list[str]) -> str:
    """`'t1' | 't2' | ...` as tsquery text: the ANY-term match of the lexical arm, for the comparison."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def run_lexrank(dsn: str, queries: QuerySet, config: SearchConfig | None = None) -> dict[str, Any]:
    config = config or SearchConfig(rerank=False)
    times: dict[str, list[float]] = {"match only (count)": [], "ts_rank_cd top depth": [], "BM25 top depth": []}
    candidates: list[float] = []
    asked: list[int] = []  # index in `queries` of each measured query
    overlap: list[float] = []
    load_before = load_average()
    with psycopg.connect(dsn, autocommit=True) as conn:
        filters = Filters((COLLECTION,), (), embedding_model=read_space(conn).model)
        predicate, pparams = filters.predicate("d")
        count_sql = sql.SQL(_COUNT).format(predicate=predicate)
        rank_sql = sql.SQL(_TS_RANK_CD).format(predicate=predicate)
        for i, text in enumerate(tqdm(queries.texts, desc="lexical ranking", unit="q", leave=False)):
            terms = query_terms(text)
            if not terms:
                continue
            tsq = or_tsquery(terms)
            t = time.perf_counter()
            row = conn.execute(count_sql, [tsq, *pparams]).fetchone()
            times["match only (count)"].append(elapsed_ms(t))
            candidates.append(float(row[0]) if row else 0.0)
            asked.append(i)
            t = time.perf_counter()
            by_rank = [r[0] for r in conn.execute(rank_sql, [tsq, tsq, *pparams, config.lexical_depth]).fetchall()]
            times["ts_rank_cd top depth"].append(elapsed_ms(t))
            t = time.perf_counter()
            with conn.transaction():
                by_bm25, _ = lexical.bm25(conn, terms, filters, config)
            times["BM25 top depth"].append(elapsed_ms(t))
            top = min(10, len(by_rank), len(by_bm25))
            if top:
                overlap.append(len(set(by_rank[:10]) & {c.id for c in by_bm25[:10]}) / top)
    return {
        "depth": config.lexical_depth, "queries": len(candidates),
        "load_average_before": load_before, "load_average_after": load_average(),
        "candidates_per_query": summarize(candidates),
        # The query with the median candidate count: the one whose plans ragfr_tools.bench.explain shows.
        "median_query": asked[sorted(range(len(asked)), key=candidates.__getitem__)[len(asked) // 2]] if asked else 0,
        "latency_ms": {name: summarize(values) for name, values in times.items()},
        "top10_overlap_bm25_vs_ts_rank_cd": round(sum(overlap) / len(overlap), 3) if overlap else None,
    }
