"""How long a search waits while `ragfr embeddings migrate` switches spaces on a large table.

The switch (runner.MigrationRun.switch) embeds the rows written during the migration under a SHARE lock (writers wait,
searches go on), then takes ACCESS EXCLUSIVE for the renames only. This measures what a reader sees: searches
(the real `ragfr.retrieval.hybrid.search`, lexical + vector arms) run back to back on their own connection
while a writer inserts rows as Open WebUI does and the migration switches; the report gives the longest
search, and the searches that overlapped the switch.

The vectors are SYNTHETIC (deterministic from SHA-256 of the text): what is measured is lock waits, which do
not depend on what a model would have written, and re-embedding 100k rows with a real model would take an
hour here. The source space is labelled local:use-multilingual (512 dims), the target
local:multilingual-e5-small (384 dims) so that the runner's own checks apply; the vectors are not theirs.
--min-recall is 0.01, the smallest the runner takes: the synthetic geometry says nothing about HNSW recall.
Runs in a scratch database, dropped afterwards.

    python -m ragfr_tools.bench.switch_wait --dsn <superuser url> --rows 100000 --out result.json
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from ragfr.embmigrate import runner
from ragfr.embmigrate import target as embmig_target
from ragfr.embmigrate.backfill import vector_literal
from ragfr.embmigrate.options import MigrateOptions
from ragfr.vector_index.upgrade import migrate as migrate_schema
from ragfr_tools import pgdb
from ragfr_tools.bench.embmigrate import PIAF, _pct, load_piaf
from ragfr_tools.bench.output import write_json

SOURCE, SOURCE_DIMS = "local:use-multilingual", 512
TARGET, TARGET_DIMS = "local:multilingual-e5-small", 384


def synthetic(text: str, dims: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(f"{dims}\0{text}".encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dims)
    return [float(x) for x in v / np.linalg.norm(v)]


class SyntheticTarget:
    """Stands in for the target model inside the runner (see the module docstring)."""

    model_id = TARGET
    dims = TARGET_DIMS

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return [synthetic(t, TARGET_DIMS) for t in texts]


class Readers:
    """Searches back to back on one autocommit connection; every (start, end) is kept, failed ones too (a
    search that waited on a lock and then met the other space's width still waited)."""

    def __init__(self, dsn: str, queries: list[str]) -> None:
        self.dsn, self.queries = dsn, queries
        self.spans: list[tuple[float, float, bool]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        from ragfr.retrieval.config import SearchConfig
        from ragfr.retrieval.hybrid import search

        config = SearchConfig(rerank=False)
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            i = 0
            while not self.stop.is_set():
                q = self.queries[i % len(self.queries)]
                dims = conn.execute("SELECT dims FROM ragfr_embedding_space").fetchone()
                start = time.monotonic()
                ok = True
                try:
                    search(conn, q, collections=["piaf"], query_vector=synthetic(q, int(dims[0]) if dims else 0),
                           config=config)
                except Exception:
                    ok = False
                self.spans.append((start, time.monotonic(), ok))
                i += 1
                time.sleep(0.005)


def _load(dsn: str, texts: list[str], rows: int) -> None:
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        with cur.copy("COPY document_chunk (id, vector, collection_name, text, vmetadata) FROM STDIN") as copy:
            for i in range(rows):
                text = f"{texts[i % len(texts)]} (§{i})"
                copy.write_row((f"piaf-{i:07d}", vector_literal(synthetic(text, SOURCE_DIMS)), "piaf", text, "{}"))
                if i and i % 20000 == 0:
                    print(f"switch-wait: loaded {i} rows", file=sys.stderr, flush=True)
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE document_chunk")


def run(admin_dsn: str, rows: int, late_rows: int, batch: int) -> dict[str, Any]:
    texts, queries = load_piaf(PIAF, 5000, 100)
    name = f"ragfr_bench_switch_{uuid.uuid4().hex[:8]}"
    dsn = pgdb.create_database(admin_dsn, name)
    real_load_target = embmig_target.load_target
    setattr(embmig_target, "load_target", lambda spec, dims, b: (SyntheticTarget(), TARGET_DIMS))  # noqa: B010
    marks: dict[str, float] = {}
    try:
        t = time.monotonic()
        migrate_schema(dsn, SOURCE_DIMS, SOURCE)
        _load(dsn, texts, rows)
        load_s = time.monotonic() - t
        opts = dict(dsn=dsn, to=TARGET, batch=batch, progress=False, min_recall=0.01)
        t = time.monotonic()
        runner.migrate(MigrateOptions(**opts, no_switch=True), lambda m: None)  # type: ignore[arg-type]
        prepare_s = time.monotonic() - t
        with psycopg.connect(dsn, autocommit=True) as conn:
            size = conn.execute("SELECT pg_total_relation_size('document_chunk')").fetchone()
        readers = Readers(dsn, queries)
        readers.thread.start()
        time.sleep(5)
        # Written after the backfill, as Open WebUI would during a long migration: the switch must catch
        # them up, the last batch of them under its SHARE lock.
        with psycopg.connect(dsn, autocommit=True) as writer:
            for i in range(late_rows):
                text = f"Un avenant ajouté pendant la migration, numéro {i}."
                writer.execute("INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata)"
                               " VALUES (%s, %s::vector, 'piaf', %s, '{}')",
                               (f"late-{i:05d}", vector_literal(synthetic(text, SOURCE_DIMS)), text))

        def say(message: str) -> None:
            marks.setdefault(message.split(":")[0].split(" ")[0], time.monotonic())

        marks["start"] = time.monotonic()
        runner.migrate(MigrateOptions(**opts), say)  # type: ignore[arg-type]
        marks["end"] = time.monotonic()
        time.sleep(3)
        readers.stop.set()
        readers.thread.join()
        with psycopg.connect(dsn, autocommit=True) as conn:
            counts = conn.execute("SELECT count(*) FILTER (WHERE embedding_model = %s), count(*)"
                                  " FROM document_chunk", (TARGET,)).fetchone()
    finally:
        setattr(embmig_target, "load_target", real_load_target)  # noqa: B010
        pgdb.drop_database(admin_dsn, name)

    before = [(e - s) * 1000 for s, e, ok in readers.spans if e < marks["start"] and ok]
    during = [(e - s) * 1000 for s, e, _ in readers.spans if e >= marks["start"] and s <= marks["end"]]
    failed = sum(1 for s, e, ok in readers.spans if not ok)
    return {
        "rows": rows, "late_rows": late_rows, "batch": batch, "synthetic_vectors": True,
        "table_bytes": int(size[0]) if size else 0,
        "load_s": round(load_s, 1), "backfill_index_verify_s": round(prepare_s, 1),
        "switch_run_s": round(marks["end"] - marks["start"], 2),
        "rows_in_target_space": int(counts[0]) if counts else 0, "rows_total": int(counts[1]) if counts else 0,
        "searches_before": {"n": len(before), "p50_ms": round(_pct(before, 0.5), 1),
                            "p95_ms": round(_pct(before, 0.95), 1), "max_ms": round(max(before), 1)},
        "searches_during_switch_run": {"n": len(during), "p50_ms": round(statistics.median(during), 1),
                                       "max_ms": round(max(during), 1)},
        # A search that read the space's width just before the switch and ran just after fails on the width:
        # at most one per switch (the migration's readers re-read the space; this loop reads it per search).
        "searches_failed": failed,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.bench.switch_wait", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True, help="superuser DSN of a cluster with pgvector (a scratch DB is made)")
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--late-rows", type=int, default=500, help="rows written after the backfill, before the switch")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--out", type=Path, help="also write the JSON result here")
    args = p.parse_args(argv)
    result = run(args.dsn, args.rows, args.late_rows, args.batch)
    print(write_json(args.out, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
