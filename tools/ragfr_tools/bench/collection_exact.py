"""What scoring a knowledge base exactly costs (issue 39): the vector arm over one collection of n chunks,
scored exactly (its own rows, whatever else the database holds) against the walk of the shared HNSW graph,
at 1024 dims, in a database that holds other collections beside it.

    python -m ragfr_tools.bench.collection_exact --dsn "$DATABASE_URL" --out docs/bench/collection-exact.json

Synthetic low-rank vectors (ragfr_tools.bench.corpus.Geometry.LOWRANK's recipe; no 1024-dim model runs
here): the exact scan's cost does not depend on the geometry, the walk's recall does. Each collection is
searched with the same queries twice, and the second, warm pass is reported, p50 / p95 of the arm alone
(`SearchResult.timings_ms` of the vector arm), on the full-precision column the exact scan reads and the
half-precision graph the walk uses (the chart's default index).
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from ragfr.retrieval.arms import SEMANTIC
from ragfr.retrieval.config import COLLECTION_EXACT_ROWS, SearchConfig
from ragfr.retrieval.hybrid import search
from ragfr.vector_index.upgrade import migrate
from ragfr_tools import pgdb
from ragfr_tools.bench.output import say, write_json
from ragfr_tools.bench.stats import load_average, machine, summarize

MODEL = "ollama:bge-m3:567m"  # the chart's model: its space, its dims; the vectors are synthetic
DIMS = 1024
RANK = 32
NOISE = 0.05


def _vectors(rng: np.random.Generator, basis: np.ndarray, n: int) -> np.ndarray:
    low = rng.standard_normal((n, RANK))
    out = np.empty((n, DIMS), dtype=np.float32)
    # By blocks of rows: the same draws in the same order as one (n, DIMS) call, without its float64 temporaries
    # (15 GB for a 600k collection).
    for start in range(0, n, 50_000):
        block = low[start:start + 50_000]
        v = block @ basis + NOISE * rng.standard_normal((len(block), DIMS))
        out[start:start + len(block)] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def _load(conn: psycopg.Connection[Any], name: str, vectors: np.ndarray) -> None:
    buf = io.StringIO()
    for i, v in enumerate(vectors):
        buf.write(f"{name}-{i:07d}\t[{','.join(map('{:.7g}'.format, v.tolist()))}]\t{name}\tpassage {i}\t{MODEL}\n")
    with conn.cursor() as cur, cur.copy(
            "COPY document_chunk (id, vector, collection_name, text, embedding_model) FROM STDIN") as copy:
        copy.write(buf.getvalue())


def run(dsn: str, sizes: list[int], others: int, queries: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((RANK, DIMS))
    with pgdb.fresh_database(dsn, "ragfr_bench_collexact") as db:
        migrate(db, DIMS, MODEL)
        with psycopg.connect(db, autocommit=True) as conn:
            # The graph is built once over everything (faster than one insert at a time); the migration's
            # statement is the one the chart runs, so the index is the shipped one.
            index = conn.execute("SELECT pg_get_indexdef('idx_document_chunk_vector'::regclass)").fetchone()
            assert index is not None
            conn.execute("DROP INDEX idx_document_chunk_vector")
            t = time.perf_counter()
            _load(conn, "others", _vectors(rng, basis, others))
            for n in sizes:
                _load(conn, f"kb{n}", _vectors(rng, basis, n))
            say(f"collection-exact: loaded {others + sum(sizes)} rows in {time.perf_counter() - t:.0f} s")
            t = time.perf_counter()
            conn.execute("SET maintenance_work_mem = '1GB'")
            conn.execute(index[0])
            conn.execute("VACUUM ANALYZE document_chunk")
            say(f"collection-exact: HNSW build {time.perf_counter() - t:.0f} s")
            qs = _vectors(rng, basis, queries)
            results = []
            for n in sizes:
                for mode, config in (("exact", SearchConfig(lexical=False, rerank=False,
                                                            collection_exact_rows=max(n, COLLECTION_EXACT_ROWS))),
                                     ("walk", SearchConfig(lexical=False, rerank=False, collection_exact_rows=0))):
                    ms: list[float] = []
                    for warm in (False, True):
                        for q in qs:
                            r = search(conn, "q", collections=[f"kb{n}"], query_vector=q.tolist(), config=config)
                            if warm:
                                ms.append(r.timings_ms[SEMANTIC.name])
                    scope = r.arms[SEMANTIC.name].scope
                    results.append({"rows": n, "mode": mode, "scope": scope, f"{SEMANTIC.name}_ms": summarize(ms)})
                    say(f"collection-exact: {n} rows {mode} ({scope}): p50 {summarize(ms)['p50']} ms")
    return {"benchmark": "collection-exact", "dims": DIMS, "others": others, "queries": queries, "seed": seed,
            "collection_exact_rows": COLLECTION_EXACT_ROWS, "machine": machine(), "load_average": load_average(),
            "results": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dsn", required=True, help="superuser DSN of the cluster (a database is made and dropped)")
    parser.add_argument("--sizes", default="2000,5000,10000,20000,40000", help="collection sizes, comma separated")
    parser.add_argument("--others", type=int, default=50_000, help="rows of the other collection beside them")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--out", type=Path)
    a = parser.parse_args(argv)
    result = run(a.dsn, [int(s) for s in a.sizes.split(",")], a.others, a.queries, a.seed)
    print(write_json(a.out, result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
