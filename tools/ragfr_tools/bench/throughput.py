"""Search throughput under concurrency: ragfr's hybrid search and stock Open WebUI's native query, side by side.

For each client count (default 1, 2, 4, 8), that many threads search for a fixed time, each on its own
connections and from its own place in the query list; then the same for Open WebUI, then the next count
(ragfr and Open WebUI alternate, so a change in the machine's load falls on both). ragfr runs as the Open
WebUI adapter does: autocommit connections, the lexical arm on a second one beside the vector arm, k 10, no
rerank, the shipped ef_search rule. Open WebUI runs its native hybrid SQL (ragfr_tools.bench.owui) walking
the full-precision HNSW index it builds on `vector` (store.OWUI_VECTOR_INDEX): the anchor is stock Open
WebUI as it runs, and the plan is checked to walk that index.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import psycopg
from psycopg import sql

from ragfr.retrieval import hybrid
from ragfr.retrieval.config import SearchConfig
from ragfr_tools.bench import owui
from ragfr_tools.bench.corpus import COLLECTION
from ragfr_tools.bench.queries import QuerySet
from ragfr_tools.bench.stats import load_average, summarize
from ragfr_tools.bench.store import OWUI_VECTOR_INDEX_NAME

K = 10
Search = Callable[[int], None]


def _ragfr_client(stack: ExitStack, dsn: str, queries: QuerySet) -> Search:
    conn = stack.enter_context(psycopg.connect(dsn, autocommit=True))
    lexical = stack.enter_context(psycopg.connect(dsn, autocommit=True))
    config = SearchConfig(k=K, rerank=False)

    def run(i: int) -> None:
        hybrid.search(conn, queries.texts[i], collections=[COLLECTION],
                      query_vector=[float(x) for x in queries.vectors[i]], config=config, lexical_conn=lexical)

    return run


def _owui_client(stack: ExitStack, dsn: str, queries: QuerySet) -> Search:
    conn = stack.enter_context(psycopg.connect(dsn))

    def run(i: int) -> None:
        owui.native_hybrid(conn, COLLECTION, queries.texts[i], queries.vectors[i], K)

    return run


def _level(dsn: str, queries: QuerySet, clients: int, seconds: float,
           make: Callable[[ExitStack, str, QuerySet], Search]) -> dict[str, Any]:
    ms: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    with ExitStack() as stack:
        searches = [make(stack, dsn, queries) for _ in range(clients)]
        for search in searches:  # one untimed search each: connections open, plans cached
            search(0)
        start = threading.Barrier(clients + 1)
        deadline = [0.0]

        def client(c: int, search: Search) -> None:
            n = len(queries)
            i = c * (n // clients)
            start.wait()
            while time.perf_counter() < deadline[0]:
                t = time.perf_counter()
                try:
                    search(i % n)
                except Exception as err:  # counted and reported: a bench that hides errors measures nothing
                    with lock:
                        errors.append(f"{type(err).__name__}: {err}")
                    continue
                with lock:
                    ms.append((time.perf_counter() - t) * 1000)
                i += 1

        threads = [threading.Thread(target=client, args=(c, s)) for c, s in enumerate(searches)]
        for t in threads:
            t.start()
        deadline[0] = time.perf_counter() + seconds
        began = time.perf_counter()
        start.wait()
        for t in threads:
            t.join()
        wall = time.perf_counter() - began
    return {"clients": clients, "seconds": round(wall, 2), "searches": len(ms),
            "searches_per_s": round(len(ms) / wall, 2), "latency_ms": summarize(ms),
            "errors": len(errors), "first_error": errors[0] if errors else None}


def owui_plan_uses_index(dsn: str, queries: QuerySet) -> bool:
    with psycopg.connect(dsn) as conn:
        conn.execute(owui.ITERATIVE_SCAN)
        vector = queries.vectors[0]
        statement = sql.SQL("EXPLAIN ") + sql.SQL(owui.VECTOR_SQL).format(dims=sql.Literal(int(vector.shape[0])))
        plan = conn.execute(statement, ([float(x) for x in vector], COLLECTION, K)).fetchall()
        conn.rollback()
    return any(OWUI_VECTOR_INDEX_NAME in str(row[0]) for row in plan)


def run_throughput(dsn: str, queries: QuerySet, clients: list[int], seconds: float,
                   say: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {"k": K, "seconds_per_level": seconds, "queries": len(queries),
                           "owui_vector_index": OWUI_VECTOR_INDEX_NAME,
                           "owui_plan_walks_its_index": owui_plan_uses_index(dsn, queries),
                           "load_average_before": load_average(), "ragfr": [], "owui_native": []}
    for n in clients:
        say(f"bench:   throughput: {n} client(s), ragfr hybrid then Open WebUI native, {seconds:g} s each")
        out["ragfr"].append(_level(dsn, queries, n, seconds, _ragfr_client))
        out["owui_native"].append(_level(dsn, queries, n, seconds, _owui_client))
    out["load_average_after"] = load_average()
    return out
