"""Migration 0011: the HNSW index at half precision (or kept at full precision), on a fresh database and on
an existing one that carries 0004's float32 index with rows in it."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import psycopg
import pytest
from tests.support.geometry import at_cosine, insert, literal, query_direction

from ragfr.db.migrate import discover
from ragfr.errors import ConfigError
from ragfr.vector_index.upgrade import migrate

HALF = "USING hnsw (((vector)::halfvec({d})) halfvec_cosine_ops) WITH (m='16', ef_construction='64')"
FULL = "USING hnsw (vector vector_cosine_ops) WITH (m='16', ef_construction='64')"
HALF_KNN = "SELECT id FROM document_chunk ORDER BY vector::halfvec({d}) <=> %s::halfvec({d}) LIMIT 5"


def _index(conn: psycopg.Connection) -> tuple[str, int]:  # type: ignore[type-arg]
    row = conn.execute("SELECT indexdef, to_regclass('idx_document_chunk_vector')::oid::int FROM pg_indexes"
                       " WHERE indexname = 'idx_document_chunk_vector'").fetchone()
    assert row is not None
    return str(row[0]), int(row[1])


def _uses_index(conn: psycopg.Connection, query: str) -> bool:  # type: ignore[type-arg]
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + query, (literal(query_direction()),)))
    return "idx_document_chunk_vector" in plan


def _before_0011(tmp_path: Path) -> Path:
    """The migrations an installation had before 0011, byte for byte (so their checksums still match)."""
    old = tmp_path / "migrations"
    old.mkdir()
    for m in discover():
        if m.version < 11:
            shutil.copy(m.path, old / m.path.name)
    return old


def test_fresh_database_gets_the_half_precision_index(empty_db) -> None:
    migrate(empty_db, 384, "local:multilingual-e5-small")
    with psycopg.connect(empty_db, autocommit=True) as conn:
        definition, _ = _index(conn)
        assert HALF.format(d=384) in definition
        # The column Open WebUI reads and writes is unchanged.
        assert conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid ="
                            " 'document_chunk'::regclass AND attname = 'vector'").fetchone() == ("vector(384)",)
        assert conn.execute("SELECT to_regclass('idx_document_chunk_vector_build')").fetchone() == (None,)


def test_full_precision_stays_available(empty_db) -> None:
    migrate(empty_db, 1024, vector_index="vector")
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert FULL in _index(conn)[0]


def test_bad_vector_index_setting_is_refused(empty_db) -> None:
    with pytest.raises(ConfigError, match="--vector-index"):
        migrate(empty_db, 1024, vector_index="float16")


def test_existing_float32_index_is_rebuilt_in_place_with_the_rows(empty_db, tmp_path: Path) -> None:
    old = _before_0011(tmp_path)
    migrate(empty_db, 1024, directory=old)
    rng = random.Random(3)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        definition, before = _index(conn)
        assert FULL in definition
        insert(conn, [(f"r{i:03d}", at_cosine(rng.uniform(-1, 1), rng), "c", "texte", {}) for i in range(300)])
        assert not _uses_index(conn, HALF_KNN.format(d=1024))
    report = migrate(empty_db)
    assert report.applied[0] == "0011_halfvec_hnsw_index.sql" and report.index_rebuilt
    with psycopg.connect(empty_db, autocommit=True) as conn:
        definition, after = _index(conn)
        assert HALF.format(d=1024) in definition and after != before
        assert conn.execute("SELECT count(*) FROM document_chunk").fetchone() == (300,)
        assert _uses_index(conn, HALF_KNN.format(d=1024))
        # The graph holds every row: a walk wide enough to be exact finds the true nearest five.
        with conn.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL hnsw.ef_search = 400")
            walked = [r[0] for r in conn.execute(HALF_KNN.format(d=1024), (literal(query_direction()),))]
        exact = [r[0] for r in conn.execute(
            "SELECT id FROM document_chunk ORDER BY vector <=> %s::vector, id LIMIT 5", (literal(query_direction()),))]
        assert walked == exact


def test_existing_database_can_keep_its_float32_index_untouched(empty_db, tmp_path: Path) -> None:
    migrate(empty_db, 1024, directory=_before_0011(tmp_path))
    with psycopg.connect(empty_db, autocommit=True) as conn:
        _, before = _index(conn)
    migrate(empty_db, vector_index="vector")
    with psycopg.connect(empty_db, autocommit=True) as conn:
        definition, after = _index(conn)
    assert FULL in definition and after == before  # same relation: not rebuilt


def test_precision_can_be_changed_back_later(empty_db) -> None:
    migrate(empty_db, 1024)
    assert not migrate(empty_db).index_rebuilt  # idempotent
    report = migrate(empty_db, vector_index="vector")
    assert report.applied == [] and report.index_rebuilt
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert FULL in _index(conn)[0]
        assert conn.execute("SELECT to_regclass('idx_document_chunk_vector_build')").fetchone() == (None,)


def test_a_plain_migrate_keeps_the_precision_an_operator_chose(empty_db) -> None:
    migrate(empty_db, 1024, vector_index="vector")
    with psycopg.connect(empty_db, autocommit=True) as conn:
        _, before = _index(conn)
    assert not migrate(empty_db).index_rebuilt  # no --vector-index: not silently back to halfvec
    with psycopg.connect(empty_db, autocommit=True) as conn:
        definition, after = _index(conn)
    assert FULL in definition and after == before


def test_no_rebuild_while_an_embedding_migration_is_open(empty_db) -> None:
    migrate(empty_db, 1024, vector_index="vector")
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("INSERT INTO ragfr_embedding_migration (from_model, from_dims, to_model, to_dims, phase)"
                     " VALUES ('a', 1024, 'b', 384, 'backfill')")
    said: list[str] = []
    assert not migrate(empty_db, vector_index="halfvec", say=said.append).index_rebuilt
    assert any("embedding migration #1 is open" in m for m in said), said
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert FULL in _index(conn)[0]
