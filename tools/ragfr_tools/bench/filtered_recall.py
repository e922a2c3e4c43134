"""Recall@10 of the vector arm under a hard filter, against exact search over the passing rows.

For each `vmetadata.sel` class: the exact top 10 of the class (the planner kept off every index scan, so
neither HNSW graph can answer: the passing rows are found through the metadata GIN index by a bitmap scan
and sorted by float32 distance, ties by id), and the first 10 of ragfr's vector arm as it runs in
production (`hybrid.search`, lexical arm off, default SearchConfig: the cost rule picks exact scoring, the
shared graph's filtered walk, or the declared filter's own graph). Records which strategy and which
graph answered, so a run with `--filter-index` and one without compare the same questions.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import psycopg

from ragfr.filters.grammar import Condition
from ragfr.retrieval import hybrid
from ragfr.retrieval.arms import SEMANTIC
from ragfr.retrieval.config import SearchConfig
from ragfr_tools.bench.corpus import COLLECTION
from ragfr_tools.bench.queries import QuerySet
from ragfr_tools.bench.recall import literal
from ragfr_tools.bench.stats import summarize

K = 10
_EXACT = """
SELECT id FROM document_chunk WHERE collection_name = %s AND vmetadata @> %s::jsonb AND vmetadata ->> 'sel' = %s
 ORDER BY vector <=> %s::vector, id LIMIT %s
"""


def run(dsn: str, queries: QuerySet, classes: list[str], k: int = K) -> dict[str, Any]:
    config = SearchConfig(k=k, lexical=False, rerank=False)
    out: dict[str, Any] = {"k": k, "queries": len(queries.texts), "classes": {}}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in classes:
            recalls: list[float] = []
            ms: list[float] = []
            strategies: set[str] = set()
            graphs: set[str] = set()
            conditions = (Condition("sel", "eq", (name,)),)
            for text, vector in zip(queries.texts, queries.vectors, strict=True):
                with conn.transaction():
                    conn.execute("SET LOCAL enable_indexscan = off")
                    truth = [r[0] for r in conn.execute(_EXACT, (COLLECTION, f'{{"sel": "{name}"}}', name,
                                                                  literal(vector), k))]
                t = time.perf_counter()
                result = hybrid.search(conn, text, collections=[COLLECTION], conditions=conditions,
                                       query_vector=[float(x) for x in vector], config=config)
                ms.append((time.perf_counter() - t) * 1000)
                arm = result.arms[SEMANTIC.name]
                strategies.add(arm.strategy)
                graphs.add(arm.filter_index or ("shared" if arm.scope == "shared graph" else str(arm.scope)))
                got = {h.id for h in result.hits[:k]}
                recalls.append(len(got & set(truth)) / max(len(truth), 1))
            out["classes"][name] = {
                "recall_at_10": round(statistics.fmean(recalls), 4), "min_recall_at_10": round(min(recalls), 4),
                "vector_arm_ms": summarize(ms), "strategy": sorted(strategies), "graph": sorted(graphs),
            }
    return out
