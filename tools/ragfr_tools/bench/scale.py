"""`make bench-scale`: footprint, build time and latency of the retrieval core at 300k-1M chunks, cold and
warm, at two shared_buffers sizes, next to stock Open WebUI's native SQL on the same rows.

For each corpus size (the `make bench` generator: PIAF French text, 1024-dim `lowrank` vectors, loaded
through the same binary COPY path and cached the same way, ragfr_tools.bench.store):
  1. load: COPY time, each index's build time, the cluster's peak memory during each build (PSS of every
     PostgreSQL process) with the maintenance_work_mem used;
  2. footprint: the database and every relation (heap, TOAST, each index);
  3. for each shared_buffers value: PostgreSQL is stopped, the database's files are evicted from the OS page
     cache (per file, see cache.py; how much stayed resident is measured), PostgreSQL starts with that
     shared_buffers, and the latency cases of `make bench` (ragfr lexical / vector / hybrid on two
     connections and on one, filtered 0.1 / 1 / 10 %, Open WebUI's native hybrid SQL) run twice:
       cold = the first pass, no warm-up: every query may read from disk;
       warm = the same pass again at once, after 5 warm-up turns: what the first pass read is cached;
  4. HNSW recall@10 against exact search at each --ef, after the last (warm) pass.

The harness drives its OWN PostgreSQL cluster (scripts/pg.sh with RAGFR_PG_STATE, default
.state/pg-scale) because it restarts it; the test cluster of `make test` is never touched.
Not part of `make test`. A 1M-chunk database takes ~10-12 GB and an hour or more to load on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from ragfr.cli.common import ef_search_arg
from ragfr.db.connect import with_database
from ragfr.errors import ConfigError, RagfrError
from ragfr.retrieval.config import SearchConfig
from ragfr_tools.bench import cache, declared, filtered_recall, latency, recall, scale_report, store
from ragfr_tools.bench.args import corpus_sizes, int_list
from ragfr_tools.bench.corpus import SEL_CLASSES, CorpusSpec, Geometry, read_piaf
from ragfr_tools.bench.output import finish, say
from ragfr_tools.bench.queries import NOISE, make_queries
from ragfr_tools.bench.sizes import relation_sizes
from ragfr_tools.bench.stats import load_average, machine, server_settings
from ragfr_tools.repo import PIAF_JSON, REPO

DEFAULT_STATE = REPO / ".state" / "pg-scale"


@dataclass
class Cluster:
    """The harness's own cluster, started and stopped through scripts/pg.sh."""

    state: Path
    say: Callable[[str], None]

    def _pg(self, *args: str, shared_buffers: str | None = None) -> str:
        env = {**os.environ, "RAGFR_PG_STATE": str(self.state)}
        env.pop("RAGFR_PG_SHARED_BUFFERS", None)
        if shared_buffers:
            env["RAGFR_PG_SHARED_BUFFERS"] = shared_buffers
        done = subprocess.run(["bash", str(REPO / "scripts" / "pg.sh"), *args], env=env, capture_output=True,
                              text=True, check=False)
        if done.returncode != 0:
            raise RagfrError(f"scripts/pg.sh {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
        return done.stdout

    def start(self, shared_buffers: str) -> str:
        self._pg("stop")
        out = self._pg("start", shared_buffers=shared_buffers)
        dsn = next(line.split("=", 1)[1] for line in out.splitlines() if line.startswith("DATABASE_URL="))
        self.say(f"bench-scale: PostgreSQL started with shared_buffers={shared_buffers}")
        return dsn

    def stop(self) -> None:
        self._pg("stop")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.bench.scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=corpus_sizes, default=[300_000, 1_000_000],
                   help="corpus sizes in chunks, multiples of 1000 (default: 300000,1000000)")
    p.add_argument("--dims", type=int, default=1024, help="vector dimension (default: 1024, bge-m3's)")
    p.add_argument("--geometry", choices=[g.value for g in Geometry], default=Geometry.LOWRANK.value,
                   help="vector geometry (default: lowrank, see ragfr_tools/bench/corpus.py)")
    p.add_argument("--shared-buffers", default="256MB,2GB",
                   help="comma-separated shared_buffers values, each measured cold and warm (default: 256MB,2GB)")
    p.add_argument("--build-memory", default="4GB",
                   help="maintenance_work_mem for the index builds of a new corpus (default: 4GB; the 1M "
                        "graph must fit or pgvector switches to a much slower build)")
    p.add_argument("--queries", type=int, default=100, help="timed queries per case and pass (default: 100)")
    p.add_argument("--recall-queries", type=int, default=100, help="queries for recall@10 (default: 100)")
    p.add_argument("--ef", type=int_list, default=[40, 100, 200], help="hnsw.ef_search values (default: 40,100,200)")
    p.add_argument("--latency-ef", type=ef_search_arg, default=None, metavar="N|auto",
                   help="hnsw.ef_search of the latency passes (default: auto, the product's size rule)")
    p.add_argument("--state-dir", type=Path, default=DEFAULT_STATE,
                   help=f"state directory of the harness's own cluster (default: {DEFAULT_STATE})")
    p.add_argument("--piaf", type=Path, default=PIAF_JSON, help=f"PIAF v1.1 JSON (default: {PIAF_JSON})")
    p.add_argument("--seed", type=int, default=CorpusSpec.seed, help="generator seed (default: %(default)s)")
    p.add_argument("--no-reuse", action="store_true", help="rebuild the corpus databases even if cached")
    p.add_argument("--skip-recall", action="store_true", help="leave out the recall@10 table")
    p.add_argument("--skip-filtered-recall", action="store_true",
                   help="leave out the filtered recall@10 table (1 %% and 10 %% classes against exact search)")
    p.add_argument("--filter-index", action="append", default=[], choices=sorted(SEL_CLASSES), metavar="CLASS",
                   help="declare sel=CLASS (ragfr filter-index) before measuring; repeatable; the cached database "
                   "keeps exactly the classes of this run (as for python -m ragfr_tools.bench)")
    p.add_argument("--skip-latency", action="store_true",
                   help="leave out the cold and warm latency passes (load, footprint and recall only)")
    p.add_argument("--keep-running", action="store_true", help="leave the cluster running at the end")
    p.add_argument("--out", type=Path, help="write the JSON result here")
    return p


def _shared_buffers(text: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    if not values or any(not v[:-2].isdigit() or v[-2:].upper() not in ("MB", "GB") for v in values):
        raise ConfigError(f"--shared-buffers: expected values like 256MB,2GB, got {text!r}")
    return values


def _bytes(setting: str) -> int:
    return int(setting[:-2]) * (2**20 if setting[-2:].upper() == "MB" else 2**30)


def run(args: argparse.Namespace, say: Callable[[str], None]) -> dict[str, Any]:
    buffers = _shared_buffers(args.shared_buffers)
    started = time.perf_counter()
    piaf = read_piaf(args.piaf)
    cluster = Cluster(args.state_dir, say)
    result: dict[str, Any] = {
        "benchmark": "retrieval-scale", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(), "load_average_start": load_average(),
        "command": "python -m ragfr_tools.bench.scale " + " ".join(args.argv),
        "params": {"dims": args.dims, "geometry": args.geometry, "queries": args.queries,
                   "recall_queries": args.recall_queries, "ef_search": args.ef, "latency_ef_search": args.latency_ef,
                   "shared_buffers": buffers,
                   "build_memory": args.build_memory, "query_vector_noise": NOISE,
                   "search_config": dict(SearchConfig().__dict__),
                   "cold": "PostgreSQL restarted, the database's files evicted from the OS page cache, no warm-up",
                   "warm": "the same queries again right after the cold pass, after 5 warm-up turns"},
        "sizes": {},
    }
    try:
        for rows in args.sizes:
            result["sizes"][str(rows)] = _one_size(args, cluster, buffers, piaf, rows, say)
    finally:
        if not args.keep_running:
            cluster.stop()
    result["load_average_end"] = load_average()
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def _one_size(args: argparse.Namespace, cluster: Cluster, buffers: list[str], piaf: Any, rows: int,
              say: Callable[[str], None]) -> dict[str, Any]:
    spec = CorpusSpec(rows=rows, dims=args.dims, seed=args.seed, geometry=Geometry(args.geometry),
                      piaf_sha256=piaf.sha256)
    # Loads and builds run with the largest shared_buffers asked for.
    admin = cluster.start(max(buffers, key=_bytes))
    t = time.perf_counter()
    corpus = store.ensure_corpus(admin, spec, piaf, reuse=not args.no_reuse, say=say, build_memory=args.build_memory)
    section: dict[str, Any] = {"database": corpus.database, "cached": corpus.cached,
                               "prepare_s": round(time.perf_counter() - t, 1), "corpus": corpus.load}
    # Before the footprint, which then counts the declared filters' indexes.
    section["filter_indexes"] = declared.declare_exactly(corpus.dsn, args.filter_index, say)
    with psycopg.connect(corpus.dsn, autocommit=True) as conn:
        section["footprint"] = relation_sizes(conn)
        queries = make_queries(conn, spec, piaf, max(args.queries, args.recall_queries))
        oid_row = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()").fetchone()
        dir_row = conn.execute("SHOW data_directory").fetchone()
    assert oid_row is not None and dir_row is not None
    files_of = (Path(dir_row[0]), int(oid_row[0]))
    timed = queries.head(args.queries)
    section["runs"] = {}
    dsn = corpus.dsn
    for sb in [] if args.skip_latency else buffers:
        cluster.stop()
        evicted = cache.evict(cache.database_files(*files_of))
        dsn = with_database(cluster.start(sb), corpus.database)
        say(f"bench-scale: {rows} rows, shared_buffers={sb}: cold pass "
            f"({evicted['resident_after']} of {evicted['bytes']} bytes still in the page cache)")
        cold = latency.run_latency(dsn, timed, corpus.load["class_sizes"], warmup=0, ef_search=args.latency_ef)
        say(f"bench-scale: {rows} rows, shared_buffers={sb}: warm pass")
        warm = latency.run_latency(dsn, timed, corpus.load["class_sizes"], ef_search=args.latency_ef)
        section["runs"][sb] = {"server": server_settings(dsn), "eviction": evicted,
                               "resident_after_runs": cache.resident_bytes(cache.database_files(*files_of)),
                               "cold": cold, "warm": warm}
    if not args.skip_recall:
        sb = max(buffers, key=_bytes) if args.skip_latency else buffers[-1]
        say(f"bench-scale: {rows} rows: recall@10 at ef_search {args.ef} (shared_buffers={sb})")
        section["recall"] = recall.run_recall(dsn, queries.head(args.recall_queries), args.ef)
    if not args.skip_filtered_recall:
        say(f"bench-scale: {rows} rows: filtered recall@10 of the vector arm (1 % and 10 % classes)")
        section["filtered_recall"] = filtered_recall.run(dsn, queries.head(args.recall_queries), ["p1", "p10"])
    return section


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return finish("bench-scale", lambda: run(args, say), args.out, scale_report.markdown)


if __name__ == "__main__":
    sys.exit(main())
