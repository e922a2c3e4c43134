"""Calibration of the vector arm's cost rule (ragfr.retrieval.strategy): per-row cost of filter-first exact
scoring and per-candidate cost of the HNSW walk, measured on a loaded corpus database.

    python -m ragfr_tools.bench.filtercost --dsn postgresql://.../ragfr_bench_100k_lowr_... --out FILE.json

For each `vmetadata.sel` class (0.1 / 1 / 10 %) and unfiltered, with the arm's own statements
(ragfr.retrieval.semantic: `_EXACT` counting and scoring every passing row, `_HNSW` walking the live index
with relaxed_order at ef_search 100, depth 50), the median time over --queries stored vectors (the first
two are warm-up). c_exact = exact ms / passing rows; c_visit = walk ms / max(ef_search, depth / share);
r = c_visit / c_exact is the rule's exact_cost_ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from ragfr.filters.grammar import Condition
from ragfr.filters.predicate import Filters
from ragfr.retrieval import semantic
from ragfr.retrieval.config import SearchConfig
from ragfr.vector_index import precision as vector_precision
from ragfr.vector_index import scan
from ragfr_tools.bench.corpus import COLLECTION, SEL_CLASSES
from ragfr_tools.bench.output import write_json
from ragfr_tools.bench.stats import load_average, machine
from ragfr_tools.bench.store import SPACE_MODEL


def _walk_ms(conn: psycopg.Connection[Any], filters: Filters, vec: str, precision: vector_precision.Precision,
             dims: int, config: SearchConfig, total: int) -> tuple[float, int]:
    predicate, params = filters.predicate("d")
    order = vector_precision.distance_to_query(sql.SQL("d.vector"), precision, dims)
    with conn.transaction():
        # relaxed_order, as for any filtered walk (the unfiltered class too: the calibration times walks alike)
        semantic.apply_settings(conn, config, total)
        conn.execute("SET LOCAL enable_sort = off")
        t = time.perf_counter()
        rows = conn.execute(sql.SQL(scan._HNSW).format(predicate=predicate, order=order),
                            [vec, *params, vec, config.semantic_depth], prepare=False).fetchall()
        return (time.perf_counter() - t) * 1000, len(rows)


def _exact_ms(conn: psycopg.Connection[Any], filters: Filters, vec: str, config: SearchConfig) -> tuple[float, int]:
    predicate, params = filters.predicate("d")
    cap = 1_000_000
    t = time.perf_counter()
    rows = conn.execute(sql.SQL(scan._EXACT).format(predicate=predicate),
                        [*params, cap + 1, vec, cap, config.semantic_depth]).fetchall()
    return (time.perf_counter() - t) * 1000, int(rows[0][0])


def run(dsn: str, queries: int) -> dict[str, Any]:
    config = SearchConfig()
    out: dict[str, Any] = {"benchmark": "filter-cost-calibration",
                           "date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine(),
                           "load_average_start": load_average(),
                           "depth": config.semantic_depth, "classes": {}}
    with psycopg.connect(dsn, autocommit=True) as conn:
        total = int(conn.execute("SELECT count(*) FROM document_chunk").fetchone()[0])  # type: ignore[index]
        ef_search = config.ef_search_at(total)
        out["ef_search"] = ef_search
        with conn.transaction():
            precision = semantic.apply_settings(conn, config, total)["vector_index"]
        vecs = [str(r[0]) for r in conn.execute(
            "SELECT vector::text FROM document_chunk ORDER BY md5(id) LIMIT %s", (queries,))]
        dims = len(vecs[0].split(","))
        out.update(rows=total, vector_index=precision)
        cases: list[tuple[str, tuple[Condition, ...]]] = [("unfiltered", ())]
        by_size = sorted(SEL_CLASSES.items(), key=lambda kv: kv[1])
        cases += [(name, (Condition("sel", "eq", (name,)),)) for name, _ in by_size]
        for name, conditions in cases:
            filters = Filters((COLLECTION,), conditions, embedding_model=SPACE_MODEL)
            walks = [_walk_ms(conn, filters, v, precision, dims, config, total) for v in vecs]
            exacts = [_exact_ms(conn, filters, v, config) for v in vecs]
            walk_ms = statistics.median(w[0] for w in walks[2:])
            exact_ms = statistics.median(e[0] for e in exacts[2:])
            passing = exacts[0][1]
            visits = max(ef_search, config.semantic_depth * total / max(passing, 1))
            out["classes"][name] = {
                "passing": passing, "walk_ms_p50": round(walk_ms, 2), "walk_returned_min": min(w[1] for w in walks),
                "exact_ms_p50": round(exact_ms, 2), "modelled_visits": round(visits),
                "c_visit_ms": round(walk_ms / visits, 4), "c_exact_ms": round(exact_ms / passing, 5),
                "r": round((walk_ms / visits) / (exact_ms / passing), 1),
                "cheaper": "exact" if exact_ms < walk_ms else "hnsw",
            }
    out["load_average_end"] = load_average()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.bench.filtercost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True, help="DSN of a loaded ragfr_bench_* corpus database")
    p.add_argument("--queries", type=int, default=22)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    result = run(args.dsn, args.queries)
    print(write_json(args.out, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
