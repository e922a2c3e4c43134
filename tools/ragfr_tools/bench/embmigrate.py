"""`make bench-embmigrate`: what a migration costs on a real database, measured, never assumed.

1. overhead of `migrate` (backfill, index, verify, switch) over the raw embedding time of the same texts
   with the same model and batch size, and over the time spent inside the embedder during the run itself
   (target <= 10 %);
2. ragfr hybrid-search latency (the real `ragfr.retrieval.hybrid.search`, no reranker, fixed rate) while
   a second migration runs as its own process, against the same queries on the idle database (target p95
   <= 2x idle);
3. disk: table and index sizes before, with both spaces, and after finalize.

Corpus: PIAF sentences (../shared/datasets/piaf) as chunks in the use-multilingual space (512 dims),
migrated to multilingual-e5-small (384 dims). Runs in a scratch database that is dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from ragfr.db import names
from ragfr.db.phases import OPEN_MIGRATION
from ragfr.embed import load_embedder
from ragfr.embmigrate import runner
from ragfr.embmigrate import target as embmig_target
from ragfr.embmigrate.backfill import vector_literal
from ragfr.embmigrate.finalize import finalize
from ragfr.embmigrate.options import MigrateOptions
from ragfr.embmigrate.rollback import rollback
from ragfr.errors import ConfigError
from ragfr.vector_index.upgrade import migrate as migrate_schema
from ragfr_tools import pgdb
from ragfr_tools.bench.output import write_json
from ragfr_tools.repo import PIAF_JSON

SOURCE, TARGET = "local:use-multilingual", "local:multilingual-e5-small"
PIAF = PIAF_JSON


def load_piaf(path: Path, n_chunks: int, n_queries: int) -> tuple[list[str], list[str]]:
    if not path.is_file():
        raise ConfigError(f"PIAF not found at {path} (see ../shared/datasets/piaf/README.md)")
    data = json.loads(path.read_text(encoding="utf-8"))
    chunks: list[str] = []
    queries: list[str] = []
    for article in data["data"]:
        for para in article["paragraphs"]:
            for sentence in re.split(r"(?<=[.!?])\s+", para["context"]):
                if 40 <= len(sentence) <= 220 and len(chunks) < n_chunks:
                    chunks.append(sentence)
            for qa in para["qas"]:
                if len(queries) < n_queries:
                    queries.append(qa["question"])
    return chunks, queries


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _sizes(conn: psycopg.Connection) -> dict[str, int]:
    rows = conn.execute(
        "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c"
        " WHERE c.relname IN ('document_chunk', 'idx_document_chunk_vector', 'idx_document_chunk_vector_prev')"
    ).fetchall()
    heap = conn.execute("SELECT pg_table_size('document_chunk')").fetchone()
    out = {str(name): int(size) for name, size in rows}
    out["document_chunk_heap_toast"] = int(heap[0]) if heap else 0
    return out


class SearchLoad:
    """Runs ragfr hybrid searches at a fixed rate in a thread, recording (end time, latency ms)."""

    def __init__(self, dsn: str, queries: list[str], vectors: list[list[float]], qps: float) -> None:
        self.dsn, self.queries, self.vectors, self.period = dsn, queries, vectors, 1.0 / qps
        self.samples: list[tuple[float, float]] = []
        self.errors = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        from ragfr.retrieval.config import SearchConfig
        from ragfr.retrieval.hybrid import search

        config = SearchConfig(rerank=False)
        # Autocommit, like a pooled application connection: an idle-in-transaction session would hold
        # its table lock between queries and (rightly) keep the migration's DDL waiting.
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            i = 0
            while not self.stop.is_set():
                q, v = self.queries[i % len(self.queries)], self.vectors[i % len(self.vectors)]
                start = time.perf_counter()
                try:
                    search(conn, q, collections=["piaf"], query_vector=v, config=config)
                    self.samples.append((time.monotonic(), (time.perf_counter() - start) * 1000))
                except Exception:
                    self.errors += 1
                i += 1
                self.stop.wait(max(0.0, self.period - (time.perf_counter() - start)))

    def between(self, t0: float, t1: float) -> list[float]:
        return [ms for t, ms in self.samples if t0 <= t <= t1]


class TimedEmbedder:
    """The real target embedder, timing its calls: the in-run split of embedding vs everything else is
    immune to the load other processes put on the machine between two separate runs."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.model_id, self.seconds = inner, inner.model_id, 0.0

    @property
    def dims(self) -> int:
        return int(self.inner.dims)

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        start = time.perf_counter()
        try:
            return list(self.inner.embed_passages(texts))
        finally:
            self.seconds += time.perf_counter() - start


def _wait_for_progress(dsn: str, timeout: float = 600.0) -> float:
    """Monotonic time at which the migration committed its first batch."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                f"SELECT rows_embedded FROM {names.STATE_TABLE} WHERE {OPEN_MIGRATION}"  # noqa: S608 - constants
            ).fetchone()
            if row and row[0] > 0:
                return time.monotonic()
            time.sleep(0.05)
    raise RuntimeError("the migration committed no batch within the timeout")


def run(
    admin_dsn: str, n_chunks: int, n_queries: int, batch: int, idle_s: float, qps: float, migrator_threads: int
) -> dict[str, Any]:
    chunks, queries = load_piaf(PIAF, n_chunks, n_queries)
    name = f"ragfr_bench_embmig_{uuid.uuid4().hex[:8]}"
    dsn = pgdb.create_database(admin_dsn, name)
    try:
        migrate_schema(dsn, 512, SOURCE)
        source = load_embedder(SOURCE, cache=False)
        with psycopg.connect(dsn) as conn:
            vectors = source.embed_passages(chunks)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata)"
                    " VALUES (%s, %s::vector, 'piaf', %s, '{}')",
                    [
                        (f"piaf-{i:06d}", vector_literal(v), t)
                        for i, (t, v) in enumerate(zip(chunks, vectors, strict=True))
                    ],
                )
            conn.commit()
            conn.autocommit = True
            conn.execute("VACUUM ANALYZE document_chunk")
            before = _sizes(conn)
        qvecs = source.embed_queries(queries)

        # 1. Overhead: raw embedding, then the migration, both in this process with no other load of ours.
        target = load_embedder(TARGET, batch_size=batch, cache=False)
        target.embed_passages(["échauffement du modèle"])
        t = time.perf_counter()
        for i in range(0, len(chunks), batch):
            target.embed_passages(chunks[i : i + batch])
        raw_s = time.perf_counter() - t

        marks: dict[str, float] = {}

        def say(message: str) -> None:
            marks.setdefault(message.split(":")[0].split(" ")[0], time.monotonic())

        timed = TimedEmbedder(target)
        real_load_target = embmig_target.load_target
        setattr(embmig_target, "load_target", lambda spec, dims, b: (timed, real_load_target(spec, dims, b)[1]))  # noqa: B010
        t0 = time.monotonic()
        try:
            runner.migrate(MigrateOptions(dsn=dsn, to=TARGET, batch=batch, progress=False), say)
        finally:
            setattr(embmig_target, "load_target", real_load_target)  # noqa: B010
        t1 = time.monotonic()
        with psycopg.connect(dsn, autocommit=True) as conn:
            switched = _sizes(conn)

        # 2. Search latency: roll back (instant: nothing was written since the switch), then migrate
        # again as a separate process, as in production, while searches run at a fixed rate.
        rollback(dsn, lambda m: None, progress=False)
        idle_load = SearchLoad(dsn, queries, qvecs, qps)
        idle_load.thread.start()
        time.sleep(idle_s)
        idle_load.stop.set()
        idle_load.thread.join()
        idle = [ms for _, ms in idle_load.samples]
        busy_load = SearchLoad(dsn, queries, qvecs, qps)
        busy_load.thread.start()
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragfr", "embeddings", "migrate", "--dsn", dsn, "--to", TARGET,
             "--batch", str(batch), "--no-progress", "--no-switch"],
            env={**os.environ, "OMP_NUM_THREADS": str(migrator_threads)},
            stderr=subprocess.PIPE, text=True,
        )
        # Measured from the first committed batch (after the model loaded) to the end of verification.
        first_batch = _wait_for_progress(dsn)
        _, err = proc.communicate()
        t_end = time.monotonic()
        busy_load.stop.set()
        busy_load.thread.join()
        if proc.returncode != 0:
            raise RuntimeError(f"second migration failed: {err[-500:]}")
        during = busy_load.between(first_batch, t_end)
        runner.migrate(MigrateOptions(dsn=dsn, to=TARGET, batch=batch, progress=False), lambda m: None)
        finalize(dsn, lambda m: None)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("VACUUM document_chunk")
            finalized = _sizes(conn)
            conn.execute("VACUUM FULL document_chunk")
            compacted = _sizes(conn)
    finally:
        pgdb.drop_database(admin_dsn, name)

    migrate_s = t1 - t0
    backfill_s = marks.get("backfill", t1) - t0
    return {
        "chunks": len(chunks),
        "mean_chunk_chars": round(statistics.mean(len(c) for c in chunks)),
        "batch": batch,
        "raw_embedding_s": round(raw_s, 2),
        "migrate_total_s": round(migrate_s, 2),
        "backfill_s": round(backfill_s, 2),
        "index_s": round(marks.get("index", t1) - marks.get("backfill", t0), 2),
        "verify_s": round(marks.get("verified", t1) - marks.get("index", t0), 2),
        "switch_s": round(marks.get("switched", t1) - marks.get("verified", t0), 2),
        "overhead_total_pct": round(100 * (migrate_s - raw_s) / raw_s, 1),
        "overhead_backfill_pct": round(100 * (backfill_s - raw_s) / raw_s, 1),
        "in_run_embedding_s": round(timed.seconds, 2),
        "in_run_overhead_pct": round(100 * (migrate_s - timed.seconds) / timed.seconds, 1),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "search_qps": qps,
        "migrator_threads": migrator_threads,
        "search_idle": {"n": len(idle), "p50_ms": round(_pct(idle, 0.5), 2), "p95_ms": round(_pct(idle, 0.95), 2),
                        "errors": idle_load.errors},
        "search_during": {"n": len(during), "p50_ms": round(_pct(during, 0.5), 2),
                          "p95_ms": round(_pct(during, 0.95), 2), "errors": busy_load.errors},
        "p95_ratio": round(_pct(during, 0.95) / _pct(idle, 0.95), 2),
        "sizes_bytes": {"before": before, "switched": switched, "finalized": finalized, "vacuum_full": compacted},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.bench.embmigrate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True, help="superuser DSN of a cluster with pgvector (a scratch DB is made)")
    p.add_argument("--chunks", type=int, default=600)
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--idle-seconds", type=float, default=20.0)
    p.add_argument("--qps", type=float, default=10.0, help="search rate during the latency measurement")
    p.add_argument("--migrator-threads", type=int, default=1,
                   help="OMP threads of the migrating process in the latency run (the other core serves SQL)")
    p.add_argument("--out", type=Path, help="also write the JSON result here")
    args = p.parse_args(argv)
    result = run(args.dsn, args.chunks, args.queries, args.batch, args.idle_seconds, args.qps, args.migrator_threads)
    print(write_json(args.out, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
