"""Helpers for embedding-migration tests: Open WebUI-style inserts, whole-database snapshots, the CLI in a
child process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from tests.support.embmigrate_corpus import chunks

from ragfr.embed import load_embedder
from ragfr.embmigrate.backfill import vector_literal

SOURCE = "local:use-multilingual"
TARGET = "local:multilingual-e5-small"
N_CHUNKS = 30

Snapshot = dict[str, Any]


def owui_insert(conn: psycopg.Connection, rows: list[tuple[str, str]], spec: str = SOURCE) -> None:
    """Insert like Open WebUI's pgvector client: id, vector, collection_name, text, vmetadata only."""
    vectors = load_embedder(spec, cache=False).embed_passages([t for _, t in rows])
    for (chunk_id, text), vec in zip(rows, vectors, strict=True):
        conn.execute(
            "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata)"
            " VALUES (%s, %s::vector, 'kb-1', %s, '{}'::jsonb)",
            (chunk_id, vector_literal(vec), text),
        )


def snapshot(dsn: str) -> Snapshot:
    """Schema of document_chunk (columns in order, indexes, triggers), the space row, every row's vectors."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        cols = conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute"
            " WHERE attrelid = 'document_chunk'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
        ).fetchall()
        names = [c[0] for c in cols]
        indexes = dict(conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'document_chunk'"
        ).fetchall())
        triggers = sorted(r[0] for r in conn.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = 'document_chunk'::regclass AND NOT tgisinternal"
        ))
        space = conn.execute("SELECT model, dims FROM ragfr_embedding_space").fetchone()
        extra = [c for c in ("vector_prev", "embedding_model_prev", "vector_next", "embedding_model_next")
                 if c in names]
        select = ", ".join(["id", "text", "vector::text", "embedding_model", *(f"{c}::text" for c in extra)])
        rows = {
            r[0]: r[1:]
            for r in conn.execute(f"SELECT {select} FROM document_chunk ORDER BY id")
        }
        state = conn.execute(
            "SELECT phase, rows_embedded, rows_reembedded_old FROM ragfr_embedding_migration ORDER BY id"
        ).fetchall()
        bm25 = conn.execute(
            "SELECT (SELECT count(*) FROM ragfr_term_stats), (SELECT sum(df) FROM ragfr_term_stats),"
            " (SELECT sum(n_docs) FROM ragfr_collection_stats)"
        ).fetchone()
    return {"columns": cols, "indexes": indexes, "triggers": triggers, "space": space, "rows": rows,
            "state": state, "bm25": bm25, "extra_columns": extra}


def run_cli(
    args: list[str], *, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`python -m ragfr ARGS` in a child process (so it can be SIGKILLed without touching the test)."""
    full_env = {**os.environ, "OMP_NUM_THREADS": "2", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ragfr", *args], capture_output=True, text=True, env=full_env, timeout=timeout,
        check=False,
    )


@pytest.fixture
def source_db(migrated_db: Callable[..., str]) -> Callable[[int], str]:
    """Factory: DSN of a fresh database in the 512-dim USE space with `n` chunks written the way Open WebUI
    writes them (its five columns only). Registered by the conftest of tests/embmigrate and tests/cli."""
    def make(n: int = N_CHUNKS) -> str:
        dsn = migrated_db(dims=512, model=SOURCE)
        with psycopg.connect(dsn, autocommit=True) as conn:
            owui_insert(conn, chunks(n))
        return dsn

    return make
