"""What a collection's own graph costs an upload (issue 39's write cost): chunks written into the collections of
a database that bench.collections loaded and synced (its `--keep-database`), timed per chunk. A chunk of a
collection with a graph of its own enters two HNSW graphs (the shared one and the collection's), one of a
smaller collection the shared one only; everything else a write does (the triggers' tsvector, BM25 postings
and statistics) is the same for both.

    python -m ragfr_tools.bench.collection_writes --dsn "$DSN" --database ragfr_bench_collections_1m \\
        --out docs/bench/collection-writes-1m.json

Each batch is one transaction of `--batch` chunks (an upload's chunks arrive together), written as one
many-values INSERT (Open WebUI's pgvector client calls bulk_save_objects, which SQLAlchemy 2 sends so, up
to 1,000 rows a statement), then ROLLED BACK so the loaded database keeps its sizes (a rolled-back chunk
leaves a dead entry in each graph it entered until VACUUM: a few thousand among 1M). The collections take
turns batch by batch, so a drift of the machine weighs on all of them alike; the first batch of each is a
warm-up, not counted. A chunk's text and vector come from its collection's own rows (the vector moved by
noise, so the graph search of its insert is a new one).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from ragfr.db.connect import with_database
from ragfr.vector_index.scan import vector_literal
from ragfr_tools.bench.collection_exact import MODEL
from ragfr_tools.bench.corpus import noisy_copy
from ragfr_tools.bench.output import say, write_json
from ragfr_tools.bench.stats import load_average, machine, summarize

_INSERT = "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata, embedding_model) VALUES "
_ROW = "(%s, %s::vector, %s, %s, %s::jsonb, %s)"


def _own_graph(conn: psycopg.Connection[Any], name: str) -> str | None:
    row = conn.execute("SELECT index_name FROM ragfr_filter_index WHERE on_collection AND value = %s",
                       (name,)).fetchone()
    return None if row is None else str(row[0])


def _samples(conn: psycopg.Connection[Any], name: str, n: int) -> list[tuple[str, np.ndarray]]:
    rows = conn.execute("SELECT text, vector::text FROM document_chunk WHERE collection_name = %s ORDER BY id"
                        " LIMIT %s", (name, n)).fetchall()
    return [(str(t), np.array(v.strip("[]").split(","), dtype=np.float32)) for t, v in rows]


def run(dsn: str, collections: list[str], batches: int, batch: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    with psycopg.connect(dsn, autocommit=True) as conn:
        graphs = {name: _own_graph(conn, name) for name in collections}
        counts = {name: int(conn.execute("SELECT count(*) FROM document_chunk WHERE collection_name = %s",
                                         (name,)).fetchone()[0]) for name in collections}  # type: ignore[index]
        samples = {name: _samples(conn, name, batches * batch) for name in collections}
        empty = [name for name in collections if not samples[name]]
        if empty:
            raise SystemExit(f"collection_writes: no chunk in {', '.join(empty)}: name collections the database holds")
        ms: dict[str, list[float]] = {name: [] for name in collections}
        for b in range(batches):
            for name in collections:
                rows = []
                for i in range(batch):
                    text, vector = samples[name][(b * batch + i) % len(samples[name])]
                    moved = noisy_copy(vector, 0.75, rng)
                    rows.append((f"{name}-write-{b:04d}-{i:03d}", vector_literal(moved.tolist()),
                                 name, text, '{"source": "write bench"}', MODEL))
                t = time.perf_counter()
                with conn.transaction(force_rollback=True):
                    conn.execute(_INSERT + ", ".join([_ROW] * len(rows)), [v for r in rows for v in r])
                if b:
                    ms[name].append((time.perf_counter() - t) * 1000 / batch)
            if (b + 1) % 10 == 0:
                say(f"collection_writes: {b + 1} of {batches} batches per collection")
        total = conn.execute("SELECT reltuples::bigint FROM pg_class WHERE relname = 'document_chunk'").fetchone()
    return {"benchmark": "collection-writes", "model": MODEL, "batches": batches, "batch": batch, "seed": seed,
            "rows_in_database": int(total[0]) if total else None, "machine": machine(),
            "load_average": load_average(),
            "collections": [{"collection": name, "rows": counts[name], "own_graph": graphs[name],
                             "graphs_written": 2 if graphs[name] else 1, "ms_per_chunk": summarize(ms[name])}
                            for name in collections]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dsn", required=True, help="DSN of the cluster")
    parser.add_argument("--database", required=True,
                        help="a database bench.collections kept (--keep-database) after its run")
    parser.add_argument("--collections", default="kb1000,kb9000,kb16000,kb70000,kb300000,kb600000",
                        help="collections written to, comma separated")
    parser.add_argument("--batches", type=int, default=51, help="batches per collection (the first a warm-up)")
    parser.add_argument("--batch", type=int, default=20, help="chunks per batch (one transaction)")
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--out", type=Path)
    a = parser.parse_args(argv)
    if a.batches < 2 or a.batch < 1:
        parser.error("--batches must be at least 2 (the first is a warm-up) and --batch at least 1")
    print(write_json(a.out, run(with_database(a.dsn, a.database), a.collections.split(","), a.batches, a.batch,
                                a.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
