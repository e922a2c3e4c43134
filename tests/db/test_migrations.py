"""The migration runner and the schema it builds, on the real database."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import psycopg
import pytest
from tests.support.geometry import at_cosine, insert, literal, query_direction
from tests.support.paths import REPO

from ragfr.db.connect import with_database
from ragfr.db.migrate import discover
from ragfr.errors import ConfigError, DatabaseError, EmbeddingSpaceError, RagfrError
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.semantic import apply_settings
from ragfr.vector_index.upgrade import migrate

OWUI_DDL = (
    "CREATE EXTENSION IF NOT EXISTS vector;"
    "CREATE TABLE document_chunk (id text PRIMARY KEY, vector vector(%d), collection_name text NOT NULL,"
    " text text, vmetadata jsonb)"
)


def test_schema_is_what_open_webui_0_12_4_expects(migrated_db) -> None:
    with psycopg.connect(migrated_db(dims=1024)) as conn:
        cols = conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute"
            " WHERE attrelid = 'document_chunk'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
        ).fetchall()
        assert cols[:5] == [("id", "text", True), ("vector", "vector(1024)", False), ("collection_name", "text", True),
                            ("text", "text", False), ("vmetadata", "jsonb", False)]
        pk = conn.execute("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
                          " AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'document_chunk'::regclass AND i.indisprimary"
                          ).fetchall()
        assert pk == [("id",)]
        idx = dict(conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'document_chunk'").fetchall())
        # Migration 0011: half-precision graph on the unchanged vector(1024) column, under Open WebUI's name and
        # with the method/parameters its startup checks (tests/vector_index/test_build.py covers the rest).
        assert ("USING hnsw (((vector)::halfvec(1024)) halfvec_cosine_ops) WITH (m='16', ef_construction='64')"
                in idx["idx_document_chunk_vector"])
        assert "USING gin (fts)" in idx["idx_document_chunk_fts"]
        assert "idx_document_chunk_collection_name" in idx
        assert conn.execute("SELECT model, dims FROM ragfr_embedding_space").fetchone() == ("ollama:bge-m3", 1024)


def test_explain_uses_the_hnsw_and_french_gin_indexes(migrated_db) -> None:
    import random

    rng = random.Random(2)
    with psycopg.connect(migrated_db(), autocommit=True) as conn:
        insert(conn, [(f"r{i}", at_cosine(rng.uniform(-1, 1), rng), "c", "Le sinistre est déclaré" if i % 7 == 0
                       else "La franchise", {}) for i in range(300)])
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id FROM document_chunk ORDER BY vector::halfvec(1024) <=> %s::halfvec(1024) LIMIT 5",
            (literal(query_direction()),)))
        assert "idx_document_chunk_vector" in plan
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id FROM document_chunk WHERE fts @@ 'sinistr'::tsquery"))
        assert "idx_document_chunk_fts" in plan


def test_ten_percent_filter_needs_the_iterative_scan_settings(migrated_db) -> None:
    """Why the settings matter: HNSW filters AFTER the graph walk. With iterative_scan off, a 10% filter
    sees about ef_search candidates and keeps ~10% of them; with ragfr's settings it keeps walking."""
    import random

    rng = random.Random(4)
    with psycopg.connect(migrated_db(), autocommit=True) as conn:
        insert(conn, [(f"r{i:05d}", at_cosine(rng.uniform(-1, 1), rng), "c", "x", {"cls": "rare" if i % 10 == 0 else "x"})
                      for i in range(3000)])
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_bitmapscan = off")
        conn.execute("SET enable_sort = off")
        q = ("SELECT id FROM document_chunk WHERE vmetadata ->> 'cls' = 'rare'"
             " ORDER BY vector::halfvec(1024) <=> %s::halfvec(1024) LIMIT 10")
        with conn.transaction():
            conn.execute("SET LOCAL hnsw.iterative_scan = off")
            off = conn.execute(q, (literal(query_direction()),)).fetchall()
        with conn.transaction():
            settings = apply_settings(conn, SearchConfig(), 3000)
            on = conn.execute(q, (literal(query_direction()),)).fetchall()
        assert settings["iterative_scan"] == "relaxed_order"
        assert len(on) == 10
        assert len(off) < 10, f"iterative_scan=off returned {len(off)} rows; the control should come back short"


def test_rerun_is_idempotent_and_reports_the_space(empty_db) -> None:
    first = migrate(empty_db, 384, "local:multilingual-e5-small")
    assert len(first.applied) == len(discover())
    again = migrate(empty_db)
    assert again.applied == [] and (again.dims, again.model) == (384, "local:multilingual-e5-small")


def test_concurrent_runners_apply_each_migration_once(empty_db) -> None:
    results: list[object] = []

    def run() -> None:
        try:
            results.append(migrate(empty_db))
        except Exception as exc:  # collected, asserted below
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not [r for r in results if isinstance(r, Exception)], results
    applied = sorted(len(r.applied) for r in results)  # type: ignore[attr-defined]
    assert applied == [0, 0, len(discover())]
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT count(*), count(DISTINCT version) FROM ragfr_schema_migrations").fetchone() == (
            len(discover()), len(discover()))


def test_changed_applied_file_is_refused(empty_db, tmp_path: Path) -> None:
    mig = tmp_path / "migrations"
    shutil.copytree(REPO / "migrations", mig)
    migrate(empty_db, directory=mig)
    path = mig / "0003_document_chunk.sql"
    path.write_text(path.read_text() + "\n-- edited\n")
    with pytest.raises(DatabaseError, match="0003_document_chunk.sql was changed after it was applied"):
        migrate(empty_db, directory=mig)


def test_failing_migration_leaves_nothing_half_applied(empty_db, tmp_path: Path) -> None:
    mig = tmp_path / "migrations"
    shutil.copytree(REPO / "migrations", mig)
    (mig / "0900_broken.sql").write_text("CREATE TABLE half_applied (x int);\nSELECT 1/0;\n")
    with pytest.raises(DatabaseError, match="0900_broken.sql failed and was rolled back: division by zero"):
        migrate(empty_db, directory=mig)
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT to_regclass('half_applied')").fetchone() == (None,)
        assert conn.execute("SELECT max(version) FROM ragfr_schema_migrations").fetchone() == (discover()[-1].version,)


def test_unknown_migration_state_is_refused(empty_db) -> None:
    migrate(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("INSERT INTO ragfr_schema_migrations (version, name, sha256) VALUES (9999, 'future', 'x')")
    with pytest.raises(DatabaseError, match=r"migration\(s\) \[9999\] that this ragfr does not know"):
        migrate(empty_db)


def test_dims_mismatch_points_to_the_runbook(empty_db) -> None:
    migrate(empty_db, 1024)
    with pytest.raises(EmbeddingSpaceError, match="embedding-migration.md"):
        migrate(empty_db, 768)
    with pytest.raises(EmbeddingSpaceError, match="--embedding-model asks for ollama:nomic-embed-text"):
        migrate(empty_db, 1024, "ollama:nomic-embed-text")


def test_open_webui_table_is_adopted_or_refused(empty_db, pg_dsn) -> None:
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute(OWUI_DDL % 3)  # type: ignore[arg-type]
        conn.execute("INSERT INTO document_chunk VALUES ('a', '[1,0,0]', 'kb', 'Les sinistres déclarés', '{}')")
    with pytest.raises(EmbeddingSpaceError, match="already has 3 dimensions, --dims asks for 1024; nothing was changed"):
        migrate(empty_db, 1024)
    report = migrate(empty_db, 3, "ollama:tiny")
    assert report.dims == 3
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT fts::text, embedding_model FROM document_chunk").fetchone() == (
            "'declar':3 'le':1 'sinistr':2", "ollama:tiny")
        assert conn.execute("SELECT lexeme, df FROM ragfr_term_stats ORDER BY 1").fetchall() == [
            ("declar", 1), ("le", 1), ("sinistr", 1)]


def test_bad_dsn_and_unreachable_server_are_one_line_errors(pg_dsn) -> None:
    with pytest.raises(ConfigError):
        migrate("")
    with pytest.raises(DatabaseError, match="cannot connect to postgresql://u:\\*\\*\\*@127.0.0.1:1/x"):
        migrate("postgresql://u:secret@127.0.0.1:1/x")
    with pytest.raises(DatabaseError, match="does not exist"):
        migrate(with_database(pg_dsn, "no_such_database_here"))
    proc = subprocess.run([str(REPO / ".venv" / "bin" / "ragfr"), "migrate", "--dsn", "postgresql://u:secret@127.0.0.1:1/x"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "secret" not in proc.stderr


def test_c_locale_database_is_refused(pg_dsn) -> None:
    with psycopg.connect(with_database(pg_dsn, "postgres"), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS ragfr_c_locale")
        conn.execute("CREATE DATABASE ragfr_c_locale TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C'")
    try:
        with pytest.raises(DatabaseError, match="LC_CTYPE is C"):
            migrate(with_database(pg_dsn, "ragfr_c_locale"))
    finally:
        with psycopg.connect(with_database(pg_dsn, "postgres"), autocommit=True) as conn:
            conn.execute("DROP DATABASE ragfr_c_locale")


@pytest.fixture
def server_without_pgvector():
    """Debian's own PostgreSQL 15 binaries (installed by `make setup`), which have no pgvector."""
    if not Path("/usr/lib/postgresql/15/bin/initdb").exists():
        pytest.fail("Debian's postgresql-15 is not installed: run `make setup`")
    # Under the repo, not /tmp: the server's OS user must be able to traverse every parent directory.
    state = REPO / ".state" / f"pg-no-vector-{os.getpid()}"
    env = {**os.environ, "RAGFR_PG_STATE": str(state), "RAGFR_PGROOT": "/"}
    out = subprocess.run(["bash", str(REPO / "scripts" / "pg.sh"), "start"], env=env, capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    yield out.stdout.strip().splitlines()[-1].split("=", 1)[1]
    subprocess.run(["bash", str(REPO / "scripts" / "pg.sh"), "stop"], env=env, check=False, capture_output=True)
    shutil.rmtree(state, ignore_errors=True)


def test_missing_extension_is_a_clear_error(server_without_pgvector: str) -> None:
    with pytest.raises(DatabaseError, match="missing extension: pgvector"):
        migrate(server_without_pgvector)
    with psycopg.connect(server_without_pgvector) as conn:
        assert conn.execute("SELECT to_regclass('ragfr_schema_migrations')").fetchone() == (None,)


def test_cli_wait_blocks_until_migrated(empty_db) -> None:
    ragfr = str(REPO / ".venv" / "bin" / "ragfr")
    early = subprocess.run([ragfr, "migrate", "--dsn", empty_db, "--wait", "--timeout", "1"], capture_output=True,
                           text=True, check=False)
    assert early.returncode == 2 and "gave up after 1s" in early.stderr
    migrate(empty_db)
    late = subprocess.run([ragfr, "migrate", "--dsn", empty_db, "--wait"], capture_output=True, text=True, check=False)
    assert late.returncode == 0 and f"schema complete ({len(discover())} migrations)" in late.stdout


def test_cli_wait_needs_every_migration_not_just_the_highest(migrated_db) -> None:
    """A database migrated by an older ragfr can hold 0100 and still miss a later-numbered-below file (0009)."""
    dsn = migrated_db()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM ragfr_schema_migrations WHERE version = 9")
    ragfr = str(REPO / ".venv" / "bin" / "ragfr")
    waited = subprocess.run([ragfr, "migrate", "--dsn", dsn, "--wait", "--timeout", "1"], capture_output=True,
                            text=True, check=False)
    assert waited.returncode == 2 and "migration(s) [9] not applied yet" in waited.stderr


def test_cli_wait_refuses_a_pod_configured_for_another_space(migrated_db) -> None:
    dsn = migrated_db(1024, "ollama:bge-m3")
    ragfr = str(REPO / ".venv" / "bin" / "ragfr")
    same = subprocess.run([ragfr, "migrate", "--dsn", dsn, "--wait", "--embedding-model", "ollama:bge-m3", "--dims",
                           "1024"], capture_output=True, text=True, check=False)
    assert same.returncode == 0, same.stderr
    stale = subprocess.run([ragfr, "migrate", "--dsn", dsn, "--wait", "--embedding-model", "ollama:other-model",
                            "--dims", "1024"], capture_output=True, text=True, check=False)
    assert stale.returncode == 2
    assert stale.stderr.strip().startswith("ragfr: error: configured for ollama:other-model (1024 dims) but the "
                                           "database's embedding space is ollama:bge-m3 (1024 dims)")


def test_errors_are_ragfr_errors() -> None:
    assert issubclass(EmbeddingSpaceError, RagfrError) and issubclass(DatabaseError, RagfrError)


def test_index_builds_on_document_chunk_after_0008_do_not_block_writes() -> None:
    """0008 built its GIN index inside its transaction, blocking Open WebUI's uploads meanwhile; applied
    files are immutable, so the rule holds from 0009 on: such an index is CREATE INDEX CONCURRENTLY, in a
    `-- ragfr:no-transaction` file (the runner runs it outside a transaction)."""
    builds = re.compile(r"CREATE\s+(?:UNIQUE\s+)?INDEX\s+(CONCURRENTLY\s+)?[^;]*?\bON\s+(?:public\.)?document_chunk\b",
                        re.IGNORECASE)
    for m in discover():
        if m.version <= 8:
            continue
        for found in builds.finditer(m.sql):
            assert found.group(1) and not m.transactional, f"{m.path.name}: {found.group(0)[:80]}"
