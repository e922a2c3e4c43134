"""A filter index's build, as an operator lives it: CONCURRENTLY (a reader's open transaction delays it,
never fails it, and writes go on), with progress lines while it waits or works, and refused while another
command holds the index lock."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from ragfr.vector_index import build as hnsw_build
from ragfr.vector_index import graphs
from ragfr.vector_index import lock as index_lock


def _chunk(conn: psycopg.Connection, i: int, kind: str) -> None:  # type: ignore[type-arg]
    conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata)"
                 " VALUES (%s, array_fill(0.01::real, ARRAY[384])::vector, 'kb', 'texte', %s::jsonb)",
                 (f"c{i}", f'{{"type": "{kind}"}}'))


def test_a_build_waits_for_readers_reports_progress_and_lets_writes_through(migrated_db, monkeypatch) -> None:
    dsn = migrated_db(dims=384, model="local:multilingual-e5-small")
    with psycopg.connect(dsn, autocommit=True) as conn:
        for i in range(20):
            _chunk(conn, i, "contrat" if i % 2 else "notice")
        assert graphs.declare(conn, "type", "contrat")
    monkeypatch.setattr(hnsw_build, "PROGRESS_EVERY_S", 0.2)
    lines: list[str] = []
    done = threading.Event()
    # An analyst's long read: its snapshot predates the build, which must wait for it to end.
    reader = psycopg.connect(dsn)
    reader.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    reader.execute("SELECT count(*) FROM document_chunk").fetchone()

    def build() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            graphs.sync(conn, dsn=dsn, say=lines.append)
        done.set()

    worker = threading.Thread(target=build)
    worker.start()
    try:
        deadline = time.monotonic() + 180  # a hang guard: the build reports its wait as soon as it starts
        while not any("waiting for" in m for m in lines) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert any(m.startswith(graphs.index_name("type", "contrat") + ": waiting for") for m in lines), lines
        assert not done.is_set()
        with psycopg.connect(dsn, autocommit=True) as writer:  # Open WebUI keeps writing meanwhile
            _chunk(writer, 100, "contrat")
        with psycopg.connect(dsn, autocommit=True) as conn:
            assert [d.state for d in graphs.listing(conn)] == ["building"]
    finally:
        reader.rollback()
        reader.close()
        worker.join(timeout=60)
    assert done.is_set() and lines[-1].startswith("built ")
    with psycopg.connect(dsn, autocommit=True) as conn:
        (declared,) = graphs.listing(conn)
        assert declared.state == "ready"
        # the row written during the build is in the index: with the shared graph out of the way (dropped in a
        # transaction rolled back) and no other scan allowed, a walk of the filter's own graph finds all 11
        with conn.transaction(force_rollback=True):
            conn.execute("DROP INDEX idx_document_chunk_vector")
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_bitmapscan = off")
            plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN SELECT id FROM document_chunk WHERE vmetadata @> '{\"type\": \"contrat\"}'::jsonb"
                " ORDER BY (vector::halfvec(384)) <=> array_fill(0.01::real, ARRAY[384])::halfvec(384) LIMIT 50"))
            assert declared.index_name in plan, plan
            found = conn.execute(
                "SELECT count(*) FROM (SELECT id FROM document_chunk WHERE vmetadata @> '{\"type\": \"contrat\"}'::jsonb"
                " ORDER BY (vector::halfvec(384)) <=> array_fill(0.01::real, ARRAY[384])::halfvec(384) LIMIT 50) x"
            ).fetchone()
            assert found == (11,)


def test_a_second_index_command_is_refused_with_the_holder(migrated_db) -> None:
    dsn = migrated_db(dims=384, model="local:multilingual-e5-small")
    with psycopg.connect(dsn, autocommit=True) as holder, psycopg.connect(dsn, autocommit=True) as conn:
        assert graphs.declare(conn, "type", "contrat")
        with index_lock.index_lock(holder, "ragfr embeddings migrate"):
            with pytest.raises(index_lock.IndexLockBusy, match="^`ragfr embeddings migrate` is already running on "
                                                                "this database [(]server pid [0-9]+, .*application "
                                                                "ragfr embeddings migrate, since "):
                graphs.sync(conn)
        assert graphs.sync(conn).built == [graphs.index_name("type", "contrat")]
