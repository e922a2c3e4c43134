"""Query latency of ragfr's retrieval core and of stock Open WebUI's retrieval, side by side.

Every configuration answers every query, the configurations taking turns call by call (round robin),
so load from other processes on a shared machine falls on all of them alike. At each turn the
configurations answer DIFFERENT queries (configuration c is n/cases queries ahead of c-1): had they
answered the same one back to back, every configuration after the first would find that query's index and
heap pages already in shared_buffers, which no production query gets from its predecessor. Latency is
wall time in this process around one call, round trips included: what a caller of `hybrid.search` waits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import psycopg
from tqdm import tqdm

from ragfr.filters.grammar import Condition
from ragfr.retrieval import hybrid
from ragfr.retrieval.arms import BUILTIN, LEXICAL, SEMANTIC, only
from ragfr.retrieval.config import SearchConfig
from ragfr_tools.bench import owui
from ragfr_tools.bench.corpus import COLLECTION, SEL_CLASSES
from ragfr_tools.bench.queries import QuerySet
from ragfr_tools.bench.stats import load_average, summarize

K = 10
WARMUP = 5
WALKED_CLASS = "p10"


@dataclass(frozen=True)
class RagfrCase:
    name: str
    config: SearchConfig
    sel: str | None = None  # vmetadata.sel class the query is filtered to
    # What-if, not the shipped behaviour: the call runs inside a transaction with `enable_sort = off`, so
    # the planner cannot replace the HNSW scan by a full sort (see FORCE_HNSW).
    force_hnsw: bool = False
    # The lexical arm on a second connection, beside the vector arm (what the Open WebUI adapter does).
    parallel: bool = True


# The planner costs a cosine distance like any operator, so on small tables it prefers sorting every row
# over walking the HNSW graph even when ragfr chose the "hnsw" strategy; disabling sorts for the call
# shows what the arm costs when the index is really used. Vector arm only: the BM25 statement needs its
# sort, and with sorts disabled the planner picks far slower plans for it (an order of magnitude at 10k in
# one run), so a "hybrid, HNSW forced" case would measure that artefact.
FORCE_HNSW = "SET LOCAL enable_sort = off"


def ragfr_cases(k: int = K, ef_search: int | None = None) -> list[RagfrCase]:
    """`ef_search`: hnsw.ef_search of every case (default: the product's size rule, SearchConfig)."""
    base = SearchConfig(k=k, rerank=False)
    if ef_search is not None:
        base = base.with_(ef_search=ef_search)
    cases = [
        RagfrCase("ragfr lexical arm (BM25, OR)", only(base, [LEXICAL])),
        RagfrCase("ragfr vector arm (HNSW)", only(base, [SEMANTIC])),
        RagfrCase("ragfr hybrid (no rerank)", base),
        RagfrCase("ragfr hybrid, arms one after the other (one connection)", base, parallel=False),
        RagfrCase("what-if: ragfr vector arm, HNSW forced", only(base, [SEMANTIC]), force_hnsw=True),
    ]
    cases += [RagfrCase(f"ragfr hybrid, filter sel={name} ({frac * 100:g} %)", base, name)
              for name, frac in sorted(SEL_CLASSES.items(), key=lambda kv: kv[1])]
    # What-if: filter-first exact scoring forced for the 10 % class (exact_threshold 20,000), the strategy the
    # cost rule turns down there; the same run shows what each strategy costs at that selectivity.
    cases.append(RagfrCase(f"what-if: ragfr hybrid, filter sel={WALKED_CLASS}, exact scoring forced "
                           "(exact_threshold 20000)", base.with_(exact_threshold=20_000), WALKED_CLASS))
    return cases


def run_latency(
    dsn: str, queries: QuerySet, class_sizes: dict[str, int], k: int = K, warmup: int = WARMUP,
    ef_search: int | None = None,
) -> dict[str, Any]:
    """`warmup` untimed turns first (0 to time a cold cache from the first query on)."""
    cases = ragfr_cases(k, ef_search)
    samples: dict[str, list[dict[str, Any]]] = {c.name: [] for c in cases}
    samples["owui native hybrid"] = []
    load_before = load_average()
    with ExitStack() as stack:
        # One connection per case, as one client with fixed settings: psycopg prepares a statement after 5
        # executions and PostgreSQL then reuses its plan even when planner settings (the what-if's
        # enable_sort, ef_search) have changed since, so cases sharing a connection would share plans.
        def connection() -> psycopg.Connection[Any]:
            return stack.enter_context(psycopg.connect(dsn, autocommit=True))

        runners: list[tuple[str, Callable[[int], dict[str, Any]]]] = [
            (c.name, _ragfr_runner(connection(), connection() if c.parallel else None, c, queries, k)) for c in cases
        ]
        owui_conn = stack.enter_context(psycopg.connect(dsn))
        runners.append(("owui native hybrid", _owui_runner(owui_conn, queries, k)))
        n = len(queries)
        stride = max(1, n // len(runners))
        for i in tqdm(range(-min(warmup, n), n), desc="latency", unit="q", leave=False):
            for turn, (name, run) in enumerate(runners):
                record = run((abs(i) + turn * stride) % n)
                if i >= 0:
                    samples[name].append(record)
    ef_search = cases[0].config.ef_search
    out: dict[str, Any] = {"k": k, "ef_search": "auto" if ef_search is None else ef_search, "queries": len(queries),
                           "warmup_turns": min(warmup, n),
                           "load_average_before": load_before,
                           "load_average_after": load_average(), "cases": {}}
    for c in cases:
        out["cases"][c.name] = _ragfr_summary(samples[c.name], c, class_sizes, k)
    out["cases"]["owui native hybrid"] = _owui_summary(samples["owui native hybrid"], k)
    return out


def _ragfr_runner(
    conn: psycopg.Connection[Any], lexical_conn: psycopg.Connection[Any] | None, case: RagfrCase, queries: QuerySet,
    k: int,
) -> Callable[[int], dict[str, Any]]:
    conditions = (Condition("sel", "eq", (case.sel,)),) if case.sel else ()

    def run(i: int) -> dict[str, Any]:
        t = time.perf_counter()
        with conn.transaction():
            if case.force_hnsw:
                conn.execute(FORCE_HNSW)
            result = hybrid.search(conn, queries.texts[i], collections=[COLLECTION], conditions=conditions,
                                   query_vector=[float(x) for x in queries.vectors[i]], config=case.config,
                                   lexical_conn=lexical_conn)
        ms = (time.perf_counter() - t) * 1000
        vector = result.arms.get(SEMANTIC.name)  # how the vector arm walked (or scanned)
        return {
            "ms": ms, "hits": len(result.hits), "underfilled": result.underfilled,
            **{f"{arm.name}_ms": result.timings_ms.get(arm.name) for arm in BUILTIN},
            **{f"{arm.name}_returned": report.returned
               for arm in BUILTIN if (report := result.arms.get(arm.name)) is not None},
            "strategy": vector.strategy if vector else None,
            "iterative_scan": vector.iterative_scan if vector else None,
            "filter_index": vector.filter_index if vector else None,
            "scope": vector.scope if vector else None,
            "ef_search": result.settings.get("ef_search"),
            "off_filter": sum(1 for h in result.hits if case.sel and h.metadata.get("sel") != case.sel),
        }

    return run


def _owui_runner(conn: psycopg.Connection[Any], queries: QuerySet, k: int) -> Callable[[int], dict[str, Any]]:
    def run(i: int) -> dict[str, Any]:
        t = time.perf_counter()
        result = owui.native_hybrid(conn, COLLECTION, queries.texts[i], queries.vectors[i], k)
        ms = (time.perf_counter() - t) * 1000
        return {"ms": ms, "hits": len(result.ids), "keyword_hits": len(result.keyword_ids),
                "vector_hits": len(result.vector_ids), "vector_ms": result.ms["vector"],
                "keyword_ms": result.ms["keyword"]}

    return run


def _ragfr_summary(rows: list[dict[str, Any]], case: RagfrCase, class_sizes: dict[str, int], k: int) -> dict[str, Any]:
    out: dict[str, Any] = {"latency_ms": summarize([r["ms"] for r in rows])}
    for arm in BUILTIN:
        values = [r[f"{arm.name}_ms"] for r in rows if r[f"{arm.name}_ms"] is not None]
        if values:
            out[f"{arm.name}_arm_ms"] = summarize(values)
    out["returned_k"] = sum(1 for r in rows if r["hits"] == k)
    out["mean_hits"] = round(sum(r["hits"] for r in rows) / max(len(rows), 1), 2)
    out["underfilled"] = sum(1 for r in rows if r["underfilled"])
    if LEXICAL.enabled(case.config):
        out[f"{LEXICAL.name}_zero_hits"] = sum(1 for r in rows if r.get(f"{LEXICAL.name}_returned") == 0)
    strategies = sorted({r["strategy"] for r in rows if r["strategy"]})
    if strategies:
        out["vector_strategy"] = strategies
        out["ef_search"] = sorted({r["ef_search"] for r in rows})
        out["walk_iterative_scan"] = sorted({r["iterative_scan"] for r in rows if r["iterative_scan"]})
        out["filter_index"] = sorted({r["filter_index"] for r in rows if r["filter_index"]})
        # A collection at or under collection_exact_rows is scored exactly, whatever graph was declared.
        out["vector_scope"] = sorted({r["scope"] for r in rows if r["scope"]})
    if case.sel:
        passing = class_sizes.get(case.sel, 0)
        out["passing_rows"] = passing
        # The target: a filtered query returns k whenever at least k rows pass the filter.
        out["target_met"] = all(r["hits"] == min(k, passing) for r in rows)
        out["off_filter_hits"] = sum(r["off_filter"] for r in rows)
    return out


def _owui_summary(rows: list[dict[str, Any]], k: int) -> dict[str, Any]:
    return {
        "latency_ms": summarize([r["ms"] for r in rows]),
        "vector_arm_ms": summarize([r["vector_ms"] for r in rows]),
        "keyword_arm_ms": summarize([r["keyword_ms"] for r in rows]),
        "returned_k": sum(1 for r in rows if r["hits"] == k),
        "mean_hits": round(sum(r["hits"] for r in rows) / max(len(rows), 1), 2),
        "keyword_zero_hits": sum(1 for r in rows if r["keyword_hits"] == 0),
        "vector_returned_k": sum(1 for r in rows if r["vector_hits"] == k),
    }


def run_legacy(dsn: str, queries: QuerySet, max_queries: int, budget_s: float, k: int = K) -> dict[str, Any]:
    """Open WebUI's legacy in-memory path: capped (it rebuilds BM25 over the whole collection per query)."""
    rows: list[dict[str, float]] = []
    started = time.perf_counter()
    load_before = load_average()
    with psycopg.connect(dsn) as conn:
        for i in tqdm(range(min(max_queries, len(queries))), desc="legacy", unit="q", leave=False):
            if rows and time.perf_counter() - started > budget_s:
                break
            rows.append(owui.legacy_hybrid(conn, COLLECTION, queries.texts[i], queries.vectors[i], k).ms)
    parts = rows[0].keys() if rows else []
    return {
        "queries_timed": len(rows), "cap_queries": max_queries, "cap_seconds": budget_s,
        "load_average_before": load_before, "load_average_after": load_average(),
        **{f"{p}_ms": summarize([r[p] for r in rows]) for p in parts},
    }
