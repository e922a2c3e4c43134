"""`make bench`: latency, filtering honesty and HNSW recall of ragfr's retrieval core, next to stock
Open WebUI 0.12.4 on the same rows.

For each corpus size (default 10k and 100k chunks, 1024 dims): build or reuse the cached database
(ragfr_tools.bench.store), then measure
  1. latency of the lexical arm, the vector arm, hybrid without rerank, and hybrid filtered to exact
     0.1 % / 1 % / 10 % classes (with how many of k came back), interleaved with Open WebUI's native
     hybrid SQL; then Open WebUI's legacy in-memory rank_bm25 path (capped: it is slow);
  2. HNSW recall@10 against exact search for each --ef value, with latency;
  3. BM25 vs ts_rank_cd ranking cost on the same lexical candidates;
  4. EXPLAIN (ANALYZE, BUFFERS) of every statement of one hybrid search and of Open WebUI's two;
  5. throughput: searches per second and latency at 1, 2, 4, 8 concurrent clients, ragfr and Open WebUI.
Open WebUI's figures walk the full-precision HNSW index it builds on `vector` (built once per cached
corpus database, store.OWUI_VECTOR_INDEX), as stock Open WebUI runs.
Texts are PIAF French; vectors are random unit vectors (no 1024-dim model offline): see corpus.py.
Writes one JSON file (--out) and prints the Markdown tables (ragfr_tools.bench.report).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from ragfr.db.connect import redact
from ragfr.errors import ConfigError
from ragfr.retrieval.config import SearchConfig
from ragfr_tools.bench import (
    declared,
    explain,
    filtered_recall,
    latency,
    lexrank,
    recall,
    report,
    store,
    throughput,
)
from ragfr_tools.bench.args import corpus_sizes, int_list
from ragfr_tools.bench.corpus import SEL_CLASSES, CorpusSpec, Geometry, read_piaf
from ragfr_tools.bench.output import finish, say
from ragfr_tools.bench.queries import NOISE, make_queries
from ragfr_tools.bench.stats import load_average, machine, server_settings
from ragfr_tools.repo import PIAF_JSON

DEFAULT_PIAF = PIAF_JSON
# What every latency figure of this command measured (issue 16: each table says its cache state).
CACHE_STATE = ("warm: the server is not restarted and the OS page cache is not dropped; 5 untimed warm-up turns "
               "first; a database just loaded or reused from an earlier run has most of its pages cached. "
               "Cold figures: make bench-scale")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", default=os.environ.get("DATABASE_URL"),
                   help="superuser DSN of the cluster (`scripts/pg.sh start` prints one); benchmark databases "
                        "named ragfr_bench_* are created there (default: $DATABASE_URL)")
    p.add_argument("--sizes", type=corpus_sizes, default=[10_000, 100_000],
                   help="corpus sizes in chunks, multiples of 1000 (default: 10000,100000)")
    p.add_argument("--dims", type=int, default=1024, help="vector dimension (default: 1024, bge-m3's)")
    p.add_argument("--geometry", choices=[g.value for g in Geometry], default=Geometry.UNIFORM.value,
                   help="how random vectors are drawn (default: uniform; see ragfr/bench/corpus.py)")
    p.add_argument("--queries", type=int, default=200, help="timed queries per case (default: 200)")
    p.add_argument("--recall-queries", type=int, default=200, help="queries for recall@10 (default: 200)")
    p.add_argument("--lexrank-queries", type=int, default=100,
                   help="queries for the BM25 vs ts_rank_cd comparison (default: 100)")
    p.add_argument("--ef", type=int_list, default=[40, 64, 100, 200],
                   help="hnsw.ef_search values for the recall table (default: 40,64,100,200)")
    p.add_argument("--legacy-queries", type=int, default=20,
                   help="cap on timed queries of Open WebUI's legacy path, per size (default: 20)")
    p.add_argument("--legacy-seconds", type=float, default=60.0,
                   help="stop timing the legacy path after this long, per size (default: 60)")
    p.add_argument("--piaf", type=Path, default=DEFAULT_PIAF, help=f"PIAF v1.1 JSON (default: {DEFAULT_PIAF})")
    p.add_argument("--seed", type=int, default=CorpusSpec.seed, help="generator seed (default: %(default)s)")
    p.add_argument("--no-reuse", action="store_true", help="rebuild the corpus databases even if cached")
    p.add_argument("--drop", action="store_true", help="drop the corpus databases at the end (no cache)")
    p.add_argument("--skip", action="append", default=[],
                   choices=["latency", "legacy", "recall", "filtered-recall", "lexrank", "explain", "throughput"],
                   help="skip a section (repeatable)")
    p.add_argument("--filter-index", action="append", default=[], choices=sorted(SEL_CLASSES), metavar="CLASS",
                   help="declare sel=CLASS (ragfr filter-index) before measuring, so its filtered searches walk "
                   "their own graph; repeatable. The cached database keeps exactly the classes of this run: "
                   f"without the flag, earlier declarations are dropped. One of {', '.join(sorted(SEL_CLASSES))}")
    p.add_argument("--clients", type=int_list, default=[1, 2, 4, 8],
                   help="concurrent clients of the throughput section (default: 1,2,4,8)")
    p.add_argument("--throughput-seconds", type=float, default=20.0,
                   help="duration of each throughput level, per system (default: 20)")
    p.add_argument("--out", type=Path, help="write the JSON result here")
    return p


def run(args: argparse.Namespace) -> dict[str, Any]:
    if not args.dsn:
        raise ConfigError("no database: pass --dsn postgresql://... or set DATABASE_URL "
                          "(`bash scripts/pg.sh start` prints one)")
    started = time.perf_counter()
    piaf = read_piaf(args.piaf)
    result: dict[str, Any] = {
        "benchmark": "retrieval-core", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(), "load_average_start": load_average(),
        # The DSN carries a password and the JSON is committed: never written out.
        "command": "python -m ragfr_tools.bench " + " ".join("$DSN" if a == args.dsn else a for a in args.argv),
        "params": {"dims": args.dims, "geometry": args.geometry, "queries": args.queries,
                   "recall_queries": args.recall_queries, "lexrank_queries": args.lexrank_queries,
                   "ef_search": args.ef, "query_vector_noise": NOISE,
                   "search_config": {k: v for k, v in SearchConfig().__dict__.items()}},
        "server": server_settings(args.dsn),
        "cache_state": CACHE_STATE,
        "sizes": {},
    }
    made: list[str] = []
    for rows in args.sizes:
        spec = CorpusSpec(rows=rows, dims=args.dims, seed=args.seed, geometry=Geometry(args.geometry),
                          piaf_sha256=piaf.sha256)
        t = time.perf_counter()
        corpus = store.ensure_corpus(args.dsn, spec, piaf, reuse=not args.no_reuse, say=say)
        made.append(corpus.database)
        section: dict[str, Any] = {"database": corpus.database, "cached": corpus.cached,
                                   "prepare_s": round(time.perf_counter() - t, 1), "corpus": corpus.load}
        with psycopg.connect(corpus.dsn, autocommit=True) as conn:
            queries = make_queries(conn, spec, piaf, max(args.queries, args.recall_queries, args.lexrank_queries))
        timed = queries.head(args.queries)
        section["filter_indexes"] = declared.declare_exactly(corpus.dsn, args.filter_index, say)
        if not {"latency", "throughput", "explain"} <= set(args.skip):
            section["owui_vector_index"] = store.ensure_owui_vector_index(corpus.dsn, say)
        if "latency" not in args.skip:
            say(f"bench: {rows} rows: latency ({len(timed)} queries x {len(latency.ragfr_cases()) + 1} cases)")
            section["latency"] = latency.run_latency(corpus.dsn, timed, corpus.load["class_sizes"])
        if "throughput" not in args.skip:
            say(f"bench: {rows} rows: throughput at {args.clients} clients")
            section["throughput"] = throughput.run_throughput(corpus.dsn, timed, args.clients,
                                                              args.throughput_seconds, say)
        if "legacy" not in args.skip:
            say(f"bench: {rows} rows: Open WebUI legacy path "
                 f"(cap {args.legacy_queries} queries / {args.legacy_seconds:g} s)")
            section["legacy"] = latency.run_legacy(corpus.dsn, timed, args.legacy_queries, args.legacy_seconds)
        if "recall" not in args.skip:
            say(f"bench: {rows} rows: recall@10 at ef_search {args.ef}")
            section["recall"] = recall.run_recall(corpus.dsn, queries.head(args.recall_queries), args.ef)
        if "filtered-recall" not in args.skip:
            say(f"bench: {rows} rows: filtered recall@10 of the vector arm (1 % and 10 % classes)")
            section["filtered_recall"] = filtered_recall.run(corpus.dsn, queries.head(args.recall_queries),
                                                              ["p1", "p10"])
        if "lexrank" not in args.skip:
            say(f"bench: {rows} rows: BM25 vs ts_rank_cd")
            section["lexrank"] = lexrank.run_lexrank(corpus.dsn, queries.head(args.lexrank_queries))
        if "explain" not in args.skip:
            i = section.get("lexrank", {}).get("median_query", 0)
            vector = [float(x) for x in queries.vectors[i]]
            hybrid_config = SearchConfig(rerank=False)
            section["explain"] = {
                "query": queries.texts[i],
                "ragfr_hybrid": explain.explain_search(corpus.dsn, queries.texts[i], vector, hybrid_config),
                "owui_native": explain.explain_owui(corpus.dsn, queries.texts[i], vector, latency.K),
            }
        result["sizes"][str(rows)] = section
    if args.drop:
        for name in made:
            store.drop(args.dsn, name)
    result["load_average_end"] = load_average()
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return finish("bench", lambda: run(args), args.out, report.markdown,
                  where=redact(args.dsn) if args.dsn else "")


if __name__ == "__main__":
    sys.exit(main())
