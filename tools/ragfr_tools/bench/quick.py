"""A quick latency check on an already loaded corpus database (e.g. a cached `ragfr_bench_*` one), without
the full harness: 200 PIAF questions, query vectors = noisy copies of stored vectors (as the harness),
`hybrid.search` with production defaults and no reranker, unfiltered and with the 1 % `sel=p1` filter;
hybrid both with the arms one after the other on one connection and with the lexical arm on a second one.

    python -m ragfr_tools.bench.quick --dsn postgresql://.../ragfr_bench_100k_lowr_...
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time

import numpy as np
import psycopg

from ragfr.filters.grammar import Condition
from ragfr.retrieval.arms import LEXICAL, VECTOR, only, reads
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.hybrid import search
from ragfr_tools.repo import PIAF_JSON

PIAF = PIAF_JSON


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.bench.quick", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--queries", type=int, default=200)
    args = p.parse_args(argv)
    data = json.loads(PIAF.read_text(encoding="utf-8"))
    questions = [q["question"] for a in data["data"] for par in a["paragraphs"] for q in par["qas"]]
    random.Random(5).shuffle(questions)
    rng = np.random.default_rng(1)
    with psycopg.connect(args.dsn, autocommit=True) as conn, psycopg.connect(args.dsn, autocommit=True) as second:
        stored = [json.loads(r[0]) for r in conn.execute(
            "SELECT vector::text FROM document_chunk ORDER BY md5(id) LIMIT %s", (args.queries,)).fetchall()]
        collection = conn.execute("SELECT collection_name FROM ragfr_collection_stats LIMIT 1").fetchone()
        assert collection is not None, "no rows in this database"
        vectors = []
        for v in stored:
            noise = rng.normal(size=len(v))
            x = np.array(v) + 0.75 * noise / np.linalg.norm(noise)
            vectors.append((x / np.linalg.norm(x)).tolist())
        cases = {LEXICAL.name: (only(SearchConfig(rerank=False), [LEXICAL]), None),
                 "hybrid, one connection": (SearchConfig(rerank=False), None),
                 "hybrid, two connections": (SearchConfig(rerank=False), second)}
        for name, (config, lexical_conn) in cases.items():
            for label, conditions in (("no filter", []), ("sel=p1 (1 %)", [Condition("sel", "eq", ("p1",))])):
                times, full = [], 0
                for question, vector in zip(questions, vectors, strict=False):
                    t0 = time.perf_counter()
                    result = search(conn, question, collections=[collection[0]], conditions=conditions,
                                    query_vector=vector if reads(config, VECTOR) else None, config=config,
                                    lexical_conn=lexical_conn)
                    times.append((time.perf_counter() - t0) * 1000)
                    full += len(result.hits) == config.k
                print(f"{name:23s} {label:13s} p50 {statistics.median(times):6.1f} ms  p95 "
                      f"{np.percentile(times, 95):6.1f} ms  returned {config.k}: {full}/{len(times)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
