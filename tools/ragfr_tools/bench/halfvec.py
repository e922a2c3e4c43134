"""Half-precision vs full-precision HNSW on the same rows: recall@10 against exact float32 search, index
size and build time (issue 16, migration 0011).

    python -m ragfr_tools.bench.halfvec --dsn $DATABASE_URL --geometry lowrank --size 100000 \
        --out docs/bench/halfvec-lowrank-100k.json

On a cached `make bench` corpus (ragfr_tools.bench.store; built if missing) it builds, one after the
other and with the same maintenance_work_mem as the corpus load, a full-precision index
(`vector vector_cosine_ops`) and a copy of the half-precision one (`(vector::halfvec(N)) halfvec_cosine_ops`),
both m=16, ef_construction=64, timing each; then for each query and ef_search:
  truth       exact float32 top 10 (sequential scan, ties by id);
  bare        one walk, `ORDER BY <index expression> LIMIT 10`, iterative scan off: what one HNSW lookup gives;
  arm         what ragfr's vector arm does: the walk's first 50 (semantic_depth), re-scored with the
              float32 vectors, top 10;
for both indexes, plus ragfr's real `hybrid.search` (vector arm only) on the live index. The planner is
kept on the index under test (seq scans and sorts off) and each plan is checked to name it. The extra
indexes are dropped at the end (--keep keeps the full-precision one).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from tqdm import tqdm

from ragfr.retrieval import hybrid
from ragfr.retrieval.arms import SEMANTIC
from ragfr.retrieval.config import SearchConfig
from ragfr_tools.bench import store
from ragfr_tools.bench.corpus import COLLECTION, CorpusSpec, Geometry, read_piaf
from ragfr_tools.bench.output import write_json
from ragfr_tools.bench.queries import make_queries
from ragfr_tools.bench.recall import literal
from ragfr_tools.bench.stats import load_average, machine, summarize
from ragfr_tools.repo import PIAF_JSON

K = 10
DEPTH = SearchConfig().semantic_depth
FULL_INDEX = "idx_bench_vector_full"
HALF_COPY = "idx_bench_vector_half"
_EXACT = ("SELECT id FROM document_chunk WHERE collection_name = %s ORDER BY vector <=> %s::vector, id LIMIT %s")


def _order(precision: str, dims: int) -> str:
    # Built from a fixed choice and an int: nothing a user typed reaches these strings (hence the noqa below).
    if precision == "halfvec":
        return f"vector::halfvec({int(dims)}) <=> %s::halfvec({int(dims)})"
    return "vector <=> %s::vector"


def _bare(precision: str, dims: int) -> str:
    return f"SELECT id FROM document_chunk WHERE collection_name = %s ORDER BY {_order(precision, dims)} LIMIT %s"  # noqa: S608


def _arm(precision: str, dims: int) -> str:
    inner = f"SELECT id, vector FROM document_chunk WHERE collection_name = %s ORDER BY {_order(precision, dims)}"  # noqa: S608
    return f"SELECT id FROM ({inner} LIMIT %s) c ORDER BY vector <=> %s::vector, id LIMIT %s"  # noqa: S608


def _build(conn: psycopg.Connection[Any], name: str, key: str) -> dict[str, Any]:
    conn.execute(f'DROP INDEX IF EXISTS "{name}"')
    load = load_average()
    t = time.perf_counter()
    conn.execute(f'CREATE INDEX "{name}" ON document_chunk USING hnsw ({key}) WITH (m = 16, ef_construction = 64)')
    seconds = round(time.perf_counter() - t, 1)
    size = conn.execute("SELECT pg_relation_size(%s::regclass)", (name,)).fetchone()
    assert size is not None
    return {"build_s": seconds, "bytes": int(size[0]), "load_average_before": load,
            "load_average_after": load_average()}


def _plan_uses(conn: psycopg.Connection[Any], statement: str, params: tuple[Any, ...], index: str) -> bool:
    plan = "\n".join(str(r[0]) for r in conn.execute("EXPLAIN " + statement, params))
    return index in plan


def run(args: argparse.Namespace) -> dict[str, Any]:
    piaf = read_piaf(args.piaf)
    spec = CorpusSpec(rows=args.size, dims=args.dims, geometry=Geometry(args.geometry), piaf_sha256=piaf.sha256)
    corpus = store.ensure_corpus(args.dsn, spec, piaf, say=_say)
    dims = args.dims
    result: dict[str, Any] = {
        "benchmark": "halfvec-vs-vector", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(), "load_average_start": load_average(),
        "command": "python -m ragfr_tools.bench.halfvec " + " ".join("$DSN" if a == args.dsn else a for a in args.argv),
        "database": corpus.database, "rows": args.size, "dims": dims, "geometry": args.geometry,
        "queries": args.queries, "ef_search": args.ef, "k": K, "arm_depth": DEPTH,
        "note": "shared 2-core machine (4 agents at once): load averages recorded per step",
    }
    with psycopg.connect(corpus.dsn, autocommit=True) as conn:
        live = conn.execute("SELECT pg_get_indexdef('idx_document_chunk_vector'::regclass)").fetchone()
        assert live is not None and "halfvec" in str(live[0]), f"expected the half-precision live index, got {live}"
        settings = conn.execute("SELECT current_setting('max_parallel_maintenance_workers'),"
                                " current_setting('shared_buffers')").fetchone()
        assert settings is not None
        conn.execute(f"SET maintenance_work_mem = '{store.BUILD_MEMORY}'")
        result["build_settings"] = {"maintenance_work_mem": store.BUILD_MEMORY,
                                    "max_parallel_maintenance_workers": settings[0], "shared_buffers": settings[1]}
        _say("halfvec bench: building the full-precision index")
        full = _build(conn, FULL_INDEX, "vector vector_cosine_ops")
        _say(f"halfvec bench: full precision built in {full['build_s']} s; building a half-precision copy")
        half = _build(conn, HALF_COPY, f"(vector::halfvec({dims})) halfvec_cosine_ops")
        conn.execute(f'DROP INDEX "{HALF_COPY}"')  # the live index is the same shape; keep one
        conn.execute("ANALYZE document_chunk")
        result["indexes"] = {"vector": full, "halfvec": half,
                             "halfvec_live_index_bytes": int(conn.execute(
                                 "SELECT pg_relation_size('idx_document_chunk_vector')").fetchone()[0]),  # type: ignore[index]
                             "load_timings": corpus.load.get("timings")}
        queries = make_queries(conn, spec, piaf, args.queries)
    result["recall"] = _recall(corpus.dsn, queries, args.ef, dims)
    if not args.keep:
        with psycopg.connect(corpus.dsn, autocommit=True) as conn:
            conn.execute(f'DROP INDEX IF EXISTS "{FULL_INDEX}"')
    result["load_average_end"] = load_average()
    return result


def _recall(dsn: str, queries: Any, ef_values: list[int], dims: int) -> dict[str, Any]:
    variants = [(p, kind) for p in ("vector", "halfvec") for kind in ("bare", "arm")]
    found: dict[tuple[str, str, int], list[float]] = {(p, kd, ef): [] for p, kd in variants for ef in ef_values}
    ms: dict[tuple[str, str, int], list[float]] = {key: [] for key in found}
    product: dict[int, list[float]] = {ef: [] for ef in ef_values}
    product_ms: dict[int, list[float]] = {ef: [] for ef in ef_values}
    product_index: dict[int, set[str]] = {ef: set() for ef in ef_values}
    exact_ms: list[float] = []
    load_before = load_average()
    with psycopg.connect(dsn, autocommit=True) as conn, psycopg.connect(dsn, autocommit=True) as client:
        q0 = literal(queries.vectors[0])
        plans = {}
        for p, kind in variants:
            with conn.transaction():
                conn.execute("SET LOCAL enable_seqscan = off")
                conn.execute("SET LOCAL enable_sort = off") if kind == "bare" else None
                stmt, params = ((_bare(p, dims), (COLLECTION, q0, K)) if kind == "bare"
                                else (_arm(p, dims), (COLLECTION, q0, DEPTH, q0, K)))
                index = "idx_document_chunk_vector" if p == "halfvec" else FULL_INDEX
                plans[f"{p}/{kind}"] = _plan_uses(conn, stmt, params, index)
        for i in tqdm(range(len(queries)), desc="recall", unit="q", leave=False):
            vec = literal(queries.vectors[i])
            t = time.perf_counter()
            with conn.transaction():
                conn.execute("SET LOCAL enable_indexscan = off")
                conn.execute("SET LOCAL enable_bitmapscan = off")
                truth = {r[0] for r in conn.execute(_EXACT, (COLLECTION, vec, K))}
            exact_ms.append((time.perf_counter() - t) * 1000)
            for ef in ef_values:
                for p, kind in variants:
                    t = time.perf_counter()
                    with conn.transaction():
                        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
                        conn.execute("SET LOCAL hnsw.iterative_scan = off")
                        conn.execute("SET LOCAL enable_seqscan = off")
                        if kind == "bare":
                            conn.execute("SET LOCAL enable_sort = off")
                            ids = {r[0] for r in conn.execute(_bare(p, dims), (COLLECTION, vec, K), prepare=False)}
                        else:
                            ids = {r[0] for r in conn.execute(_arm(p, dims), (COLLECTION, vec, DEPTH, vec, K),
                                                              prepare=False)}
                    ms[(p, kind, ef)].append((time.perf_counter() - t) * 1000)
                    found[(p, kind, ef)].append(len(truth & ids) / K)
                config = SearchConfig(k=K, rerank=False, lexical=False, ef_search=ef)
                t = time.perf_counter()
                result = hybrid.search(client, queries.texts[i], collections=[COLLECTION],
                                       query_vector=[float(x) for x in queries.vectors[i]], config=config)
                product_ms[ef].append((time.perf_counter() - t) * 1000)
                product[ef].append(len(truth & {h.id for h in result.hits}) / K)
                product_index[ef].add(f"{result.settings['vector_index']}/{result.arms[SEMANTIC.name].strategy}")
    out: dict[str, Any] = {"queries": len(queries), "load_average_before": load_before,
                           "load_average_after": load_average(), "exact_ms": summarize(exact_ms),
                           "plans_use_the_index": plans, "by_ef_search": {}}
    for ef in ef_values:
        row: dict[str, Any] = {}
        for p, kind in variants:
            r = np.asarray(found[(p, kind, ef)])
            row[f"{p}_{kind}"] = {"recall_at_10": round(float(r.mean()), 4), "min": round(float(r.min()), 2),
                                  "latency_ms": summarize(ms[(p, kind, ef)])}
        r = np.asarray(product[ef])
        row["ragfr_vector_arm"] = {"recall_at_10": round(float(r.mean()), 4), "min": round(float(r.min()), 2),
                                   "latency_ms": summarize(product_ms[ef]), "index/strategy": sorted(product_index[ef])}
        cost = row["vector_arm"]["recall_at_10"] - row["halfvec_arm"]["recall_at_10"]
        row["arm_recall_cost_of_halfvec"] = round(cost, 4)
        out["by_ef_search"][str(ef)] = row
    return out


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.bench.halfvec", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True, help="superuser DSN of the cluster (`scripts/pg.sh start` prints one)")
    p.add_argument("--size", type=int, default=100_000, help="corpus rows (default 100000)")
    p.add_argument("--dims", type=int, default=1024)
    p.add_argument("--geometry", choices=[g.value for g in Geometry], default=Geometry.LOWRANK.value)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--ef", type=_ints, default=[40, 100, 200])
    p.add_argument("--piaf", type=Path, default=PIAF_JSON)
    p.add_argument("--keep", action="store_true", help="keep the full-precision index afterwards")
    p.add_argument("--out", type=Path)
    return p


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    result = run(args)
    print(write_json(args.out, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
