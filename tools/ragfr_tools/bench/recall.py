"""HNSW recall@10 against exact search, per hnsw.ef_search, with the latency of each setting.

Exact top 10: a sequential scan ordered by cosine distance (`enable_indexscan = off`), ties by id.
Approximate, three ways for each ef_search:
- ragfr's vector arm as it runs in production (`hybrid.search` with the lexical arm off: depth 50,
  relaxed_order iterative scan, the hard-filter predicate), its first 10;
- the same with the planner kept on the HNSW index (what-if `enable_sort = off`, see latency.FORCE_HNSW);
- the bare index, `ORDER BY <index expression> <=> q LIMIT 10` with iterative scan off and seq scans and sorts
  disabled (so the planner cannot answer exactly instead), which is what one HNSW lookup of 10 gives (and
  what Open WebUI's vector arm asks, at ef_search 40).
The planner may answer ragfr's arm statement WITHOUT the HNSW index (a sort over all rows is estimated
cheaper at some sizes and ef_search values); `plan_uses_hnsw` records, per ef_search, whether it did.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from tqdm import tqdm

from ragfr.retrieval import hybrid
from ragfr.retrieval.config import SearchConfig
from ragfr.vector_index import precision as vector_precision
from ragfr_tools.bench.corpus import COLLECTION
from ragfr_tools.bench.explain import explain_search
from ragfr_tools.bench.latency import FORCE_HNSW
from ragfr_tools.bench.queries import QuerySet
from ragfr_tools.bench.stats import load_average, summarize

K = 10
_EXACT = """
SELECT id FROM document_chunk WHERE collection_name = %s
 ORDER BY vector <=> %s::vector, id LIMIT %s
"""


def _index_sql(precision: str, dims: int) -> sql.Composed:
    """The bare walk through the live index's own expression (migration 0011: `vector::halfvec(N)`), or the
    planner could only answer it by a sequential scan, i.e. exactly."""
    order = vector_precision.distance_to_query(sql.SQL("vector"), vector_precision.precision_of(precision), dims)
    return sql.SQL("SELECT id FROM document_chunk WHERE collection_name = %s ORDER BY {} LIMIT %s").format(order)


def literal(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def run_recall(dsn: str, queries: QuerySet, ef_values: list[int], k: int = K) -> dict[str, Any]:
    exact_ms: list[float] = []
    arm: dict[int, dict[str, list[float]]] = {ef: {"recall": [], "ms": []} for ef in ef_values}
    forced: dict[int, dict[str, list[float]]] = {ef: {"recall": [], "ms": []} for ef in ef_values}
    index: dict[int, dict[str, list[float]]] = {ef: {"recall": [], "ms": []} for ef in ef_values}
    load_before = load_average()
    with ExitStack() as stack:
        conn = stack.enter_context(psycopg.connect(dsn, autocommit=True))
        # One connection per (variant, ef_search), as one client with fixed settings: a statement psycopg
        # has prepared keeps its plan in PostgreSQL even after the planner settings change.
        clients = {(force, ef): stack.enter_context(psycopg.connect(dsn, autocommit=True))
                   for force in (False, True) for ef in ef_values}
        row = conn.execute(vector_precision.PRECISION_SQL, (vector_precision.INDEX,)).fetchone()
        bare = _index_sql(str(row[0]) if row else "vector", len(queries.vectors[0]))
        index_used = _index_used(conn, queries, bare)
        for i in tqdm(range(len(queries)), desc="recall", unit="q", leave=False):
            vec = literal(queries.vectors[i])
            t = time.perf_counter()
            with conn.transaction():
                conn.execute("SET LOCAL enable_indexscan = off")
                truth = {r[0] for r in conn.execute(_EXACT, (COLLECTION, vec, k)).fetchall()}
            exact_ms.append((time.perf_counter() - t) * 1000)
            for ef in ef_values:
                config = SearchConfig(k=k, rerank=False, lexical=False, ef_search=ef)
                for sink, force in ((arm, False), (forced, True)):
                    client = clients[(force, ef)]
                    t = time.perf_counter()
                    with client.transaction():
                        if force:
                            client.execute(FORCE_HNSW)
                        result = hybrid.search(client, queries.texts[i], collections=[COLLECTION],
                                               query_vector=[float(x) for x in queries.vectors[i]], config=config)
                    sink[ef]["ms"].append((time.perf_counter() - t) * 1000)
                    sink[ef]["recall"].append(len(truth & {h.id for h in result.hits[:k]}) / k)
                t = time.perf_counter()
                with conn.transaction():
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
                    conn.execute("SET LOCAL hnsw.iterative_scan = off")
                    conn.execute("SET LOCAL enable_seqscan = off")
                    conn.execute("SET LOCAL enable_sort = off")
                    found = {r[0] for r in conn.execute(bare, (COLLECTION, vec, k)).fetchall()}
                index[ef]["ms"].append((time.perf_counter() - t) * 1000)
                index[ef]["recall"].append(len(truth & found) / k)
    return {
        "k": k, "queries": len(queries), "index_scan_verified": index_used,
        "load_average_before": load_before, "load_average_after": load_average(),
        "exact_ms": summarize(exact_ms),
        "ragfr_vector_arm": {str(ef): {**_summary(arm[ef]), "plan_uses_hnsw": _arm_uses_hnsw(dsn, queries, ef, k)}
                             for ef in ef_values},
        "ragfr_vector_arm_hnsw_forced": {str(ef): _summary(forced[ef]) for ef in ef_values},
        "bare_index_limit_10": {str(ef): _summary(index[ef]) for ef in ef_values},
    }


def _summary(values: dict[str, list[float]]) -> dict[str, Any]:
    recalls = np.asarray(values["recall"])
    return {"recall_at_10": round(float(recalls.mean()), 4), "min_recall": round(float(recalls.min()), 2),
            "queries_below_0.9": int((recalls < 0.9).sum()), "latency_ms": summarize(values["ms"])}


def _index_used(conn: psycopg.Connection[Any], queries: QuerySet, bare: sql.Composed) -> bool:
    """The bare-index figures mean something only if the plan really walks the HNSW index."""
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_sort = off")
        plan = conn.execute(sql.SQL("EXPLAIN ") + bare, (COLLECTION, literal(queries.vectors[0]), K)).fetchall()
    return any("idx_document_chunk_vector" in str(r[0]) for r in plan)


def _arm_uses_hnsw(dsn: str, queries: QuerySet, ef: int, k: int) -> bool:
    config = SearchConfig(k=k, rerank=False, lexical=False, ef_search=ef)
    plans = explain_search(dsn, queries.texts[0], [float(x) for x in queries.vectors[0]], config)
    return any("idx_document_chunk_vector" in line for p in plans for line in p["plan"])
