"""Loaded benchmark databases, built once and reused while their inputs are unchanged.

One database per corpus, named after a hash of the generator parameters and the schema's migration
checksums, so a changed generator or migration gets a fresh database and an unchanged one is reused as
is (a 100k load with its HNSW build takes minutes). A database counts as loaded only when its
`ragfr_bench_meta` row exists, which is written last: an interrupted load is dropped and redone.

Loading: the schema is migrated as in production, every secondary index of document_chunk is dropped,
rows arrive by binary COPY (the row and statement triggers still fill fts, embedding_model and the BM25
statistics), then each index is recreated from its own saved definition, plus the expression GIN index
stock Open WebUI creates for its keyword arm.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np
import psycopg
from tqdm import tqdm

from ragfr.db.connect import with_database
from ragfr.db.migrate import discover
from ragfr.errors import DatabaseError
from ragfr.vector_index.upgrade import migrate
from ragfr_tools import pgdb
from ragfr_tools.bench import pgcopy
from ragfr_tools.bench.corpus import COLLECTION, Chunk, CorpusSpec, Piaf, block_vectors, chunks
from ragfr_tools.bench.memory import timed_with_memory

SPACE_MODEL = "ollama:bge-m3"  # the space's name only: vectors are random (see corpus.py)
# Open WebUI 0.12.4 PgvectorClient._ensure_text_search_index creates exactly this for its keyword arm.
OWUI_TEXT_INDEX = (
    "CREATE INDEX IF NOT EXISTS idx_document_chunk_text_search ON document_chunk "
    "USING GIN (to_tsvector('simple', coalesce(text, '')))"
)
# Open WebUI 0.12.4 with PGVECTOR_INDEX_METHOD=hnsw (the chart's setting) builds a full-precision HNSW index
# on the column (PgvectorClient._ensure_vector_index: vector_cosine_ops, m 16, ef_construction 64) and its
# queries walk it. ragfr's schema indexes a halfvec expression under that index's name instead, which
# Open WebUI's `ORDER BY vector <=> q` cannot use: the stock anchor needs its own index, named apart.
OWUI_VECTOR_INDEX_NAME = "bench_owui_vector_hnsw"
OWUI_VECTOR_INDEX = (
    f"CREATE INDEX IF NOT EXISTS {OWUI_VECTOR_INDEX_NAME} ON document_chunk "
    "USING hnsw (vector vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
)
BUILD_MEMORY = "2GB"  # the 100k HNSW graph (~0.8 GB) must fit, or pgvector falls back to a slow on-disk build
COPY_ROWS = 10_000  # rows per COPY statement: bounds the statistics trigger's transition table
_META = """
CREATE TABLE ragfr_bench_meta (key text PRIMARY KEY, spec jsonb NOT NULL, load jsonb NOT NULL,
                               loaded_at timestamptz NOT NULL DEFAULT now())
"""


@dataclass(frozen=True)
class LoadedCorpus:
    spec: CorpusSpec
    dsn: str
    database: str
    cached: bool
    load: dict[str, Any]


def corpus_key(spec: CorpusSpec) -> str:
    schema = ",".join(f"{m.version}:{m.sha256}" for m in discover())
    return hashlib.sha256(f"{spec.key()}|{schema}".encode()).hexdigest()[:12]


def database_name(spec: CorpusSpec) -> str:
    return f"ragfr_bench_{spec.rows // 1000}k_{spec.geometry.value[:4]}_{corpus_key(spec)}"


def ensure_corpus(
    admin_dsn: str, spec: CorpusSpec, piaf: Piaf, *, reuse: bool = True, say: Callable[[str], None] = print,
    build_memory: str = BUILD_MEMORY,
) -> LoadedCorpus:
    name = database_name(spec)
    dsn = with_database(admin_dsn, name)
    key = corpus_key(spec)
    with psycopg.connect(with_database(admin_dsn, "postgres"), autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None
        if exists and reuse:
            meta = _read_meta(dsn, key)
            if meta is not None:
                say(f"bench: reusing {name} ({spec.rows} rows, loaded {meta['loaded_at']})")
                return LoadedCorpus(spec, dsn, name, True, meta["load"])
            say(f"bench: {name} exists but its load never finished: rebuilding it")
        pgdb.create_database(admin_dsn, name, replace=True)
    try:
        load = _load(dsn, spec, piaf, key, say, build_memory)
    except BaseException:
        # Leave no half-loaded database behind under a name that looks reusable.
        drop(admin_dsn, name)
        raise
    return LoadedCorpus(spec, dsn, name, False, load)


def drop(admin_dsn: str, name: str) -> None:
    pgdb.drop_database(admin_dsn, name)


def _read_meta(dsn: str, key: str) -> dict[str, Any] | None:
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("SELECT load, loaded_at FROM ragfr_bench_meta WHERE key = %s", (key,)).fetchone()
    except psycopg.Error:
        return None
    return None if row is None else {"load": row[0], "loaded_at": str(row[1])}


def _load(
    dsn: str, spec: CorpusSpec, piaf: Piaf, key: str, say: Callable[[str], None], build_memory: str
) -> dict[str, Any]:
    timings: dict[str, float] = {}
    memory: dict[str, Any] = {}
    t = time.perf_counter()
    migrate(dsn, spec.dims, SPACE_MODEL, say=lambda _msg: None)
    timings["migrate_s"] = _since(t)
    with psycopg.connect(dsn, autocommit=True) as conn:
        saved = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'document_chunk'"
            " AND indexname <> 'document_chunk_pkey' ORDER BY indexname"
        ).fetchall()
        definitions = [r[1] for r in saved]
        for name, _ in saved:
            conn.execute(f'DROP INDEX "{name}"')
        t = time.perf_counter()
        _copy_rows(conn, spec, piaf, say)
        timings["copy_s"] = _since(t)
        conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (build_memory,))
        for definition in [*definitions, OWUI_TEXT_INDEX]:
            label = _index_label(definition)
            built = timed_with_memory(conn, definition)
            timings[f"index:{label}_s"] = built["seconds"]
            memory[label] = built["memory"]
            say(f"bench:   {label} built in {built['seconds']} s (cluster peak {built['memory'].get('peak_mib')} MiB)")
        t = time.perf_counter()
        # The whole database, postings included: the BM25 arm's index-only scans need the visibility map
        # that autovacuum would set some time after a bulk load (migrations/0007).
        conn.execute("VACUUM ANALYZE")
        timings["vacuum_analyze_s"] = _since(t)
        sizes = conn.execute(
            "SELECT pg_total_relation_size('document_chunk'), pg_relation_size('idx_document_chunk_vector'),"
            " pg_relation_size('idx_document_chunk_fts'), pg_relation_size('idx_document_chunk_text_search'),"
            " (SELECT avg(length(text)) FROM document_chunk), (SELECT avg(fts_len) FROM document_chunk)"
        ).fetchone()
        assert sizes is not None
        load = {
            "timings": timings,
            "bytes": {"table_total": sizes[0], "hnsw": sizes[1], "gin_french": sizes[2], "gin_simple": sizes[3]},
            "avg_chars": round(float(sizes[4]), 1),
            "avg_tokens": round(float(sizes[5]), 1),
            "class_sizes": _class_sizes(conn),
            "build": {"maintenance_work_mem": build_memory,
                      "max_parallel_maintenance_workers": conn.execute(
                          "SELECT current_setting('max_parallel_maintenance_workers')").fetchone()[0],  # type: ignore[index]
                      "memory_per_index": memory},
        }
        conn.execute(_META)
        conn.execute(
            "INSERT INTO ragfr_bench_meta (key, spec, load) VALUES (%s, %s, %s)",
            (key, json.dumps({**spec.__dict__, "geometry": spec.geometry.value}), json.dumps(load)),
        )
    return load


def _index_label(definition: str) -> str:
    return definition.split(" ON ")[0].split()[-1]


def _class_sizes(conn: psycopg.Connection[Any]) -> dict[str, int]:
    rows = conn.execute("SELECT vmetadata->>'sel', count(*) FROM document_chunk GROUP BY 1 ORDER BY 1").fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


def _copy_rows(conn: psycopg.Connection[Any], spec: CorpusSpec, piaf: Piaf, say: Callable[[str], None]) -> None:
    rows = chunks(spec, piaf)
    with tqdm(total=spec.rows, desc=f"load {spec.rows // 1000}k", unit="row", leave=False) as bar:
        block = 0
        while True:
            batch = list(islice(rows, COPY_ROWS))
            if not batch:
                break
            with conn.transaction(), conn.cursor() as cur, cur.copy(
                "COPY document_chunk (id, vector, collection_name, text, vmetadata) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.write(pgcopy.HEADER)
                for start in range(0, len(batch), 1000):
                    part = batch[start:start + 1000]
                    copy.write(b"".join(_tuple(c, v) for c, v in zip(part, block_vectors(spec, block, len(part)),
                                                                      strict=True)))
                    block += 1
                copy.write(pgcopy.TRAILER)
            bar.update(len(batch))


_COLLECTION = COLLECTION.encode()


def _tuple(chunk: Chunk, vector: np.ndarray) -> bytes:
    meta = pgcopy.jsonb(json.dumps(chunk.metadata, ensure_ascii=False))
    return pgcopy.row(chunk.id.encode(), pgcopy.vector(vector), _COLLECTION, chunk.text.encode(), meta)


def _since(t: float) -> float:
    return round(time.perf_counter() - t, 2)


def iter_existing(admin_dsn: str) -> Iterable[str]:
    try:
        with psycopg.connect(with_database(admin_dsn, "postgres"), autocommit=True) as admin:
            rows = admin.execute("SELECT datname FROM pg_database WHERE datname LIKE 'ragfr_bench_%' ORDER BY 1")
            return [r[0] for r in rows.fetchall()]
    except psycopg.Error as exc:
        raise DatabaseError(f"cannot list benchmark databases: {exc}") from exc


def ensure_owui_vector_index(dsn: str, say: Callable[[str], None], build_memory: str = BUILD_MEMORY) -> dict[str, Any]:
    """Stock Open WebUI's full-precision HNSW index on `vector`, built once per cached corpus database."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute("SELECT pg_relation_size(to_regclass(%s))", (OWUI_VECTOR_INDEX_NAME,)).fetchone()
        if found is not None and found[0] is not None:
            return {"index": OWUI_VECTOR_INDEX_NAME, "built_now": False, "bytes": int(found[0])}
        say(f"bench:   building {OWUI_VECTOR_INDEX_NAME} (Open WebUI's full-precision HNSW on vector) ...")
        conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (build_memory,))
        built = timed_with_memory(conn, OWUI_VECTOR_INDEX)
        conn.execute("ANALYZE document_chunk")
        size = conn.execute("SELECT pg_relation_size(%s::regclass)", (OWUI_VECTOR_INDEX_NAME,)).fetchone()
        assert size is not None
        say(f"bench:   {OWUI_VECTOR_INDEX_NAME} built in {built['seconds']} s")
        return {"index": OWUI_VECTOR_INDEX_NAME, "built_now": True, "seconds": built["seconds"], "bytes": int(size[0])}
