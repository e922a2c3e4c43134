"""`python -m ragfr_tools.bench.upgrade`: a benchmark database cached under an older schema is migrated in place
and then reused by the harness under the current schema's name, with the migrations' time on record.

Real PostgreSQL (our pgvector build), the harness's own 1000-row corpus, the real migrations: the older schema is
the shipped migrations without the newest ordinary one (0013), as a deployment of the previous release has.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest
from tests.support.paths import PIAF_JSON

from ragfr.db.connect import with_database
from ragfr.db.migrate import migrations_dir
from ragfr_tools.bench import lexarm, store, upgrade
from ragfr_tools.bench.corpus import CorpusSpec, read_piaf

pytestmark = pytest.mark.skipif(not PIAF_JSON.is_file(), reason=f"PIAF not found at {PIAF_JSON}")


def test_a_cached_database_is_upgraded_in_place_and_reused(pg_dsn: str, tmp_path: Path, monkeypatch) -> None:
    piaf = read_piaf(PIAF_JSON)
    spec = CorpusSpec(rows=1000, dims=16, seed=11, piaf_sha256=piaf.sha256)
    older = tmp_path / "migrations"
    older.mkdir()
    for f in migrations_dir().glob("*.sql"):
        if not f.name.startswith("0013_"):
            shutil.copy(f, older / f.name)
    monkeypatch.setenv("RAGFR_MIGRATIONS_DIR", str(older))
    old_name = store.database_name(spec)
    monkeypatch.delenv("RAGFR_MIGRATIONS_DIR")
    new_name = store.database_name(spec)
    assert old_name != new_name  # the schema is part of the cache key
    try:
        monkeypatch.setenv("RAGFR_MIGRATIONS_DIR", str(older))
        loaded = store.ensure_corpus(pg_dsn, spec, piaf, say=lambda _m: None)
        monkeypatch.delenv("RAGFR_MIGRATIONS_DIR")
        assert loaded.database == old_name and not loaded.cached

        assert upgrade.upgrade(pg_dsn, old_name) == new_name
        with psycopg.connect(with_database(pg_dsn, "postgres"), autocommit=True) as admin:
            names = {r[0] for r in admin.execute("SELECT datname FROM pg_database WHERE datname IN (%s, %s)",
                                                 (old_name, new_name))}
        assert names == {new_name}
        reused = store.ensure_corpus(pg_dsn, spec, piaf, say=lambda _m: None)
        assert reused.cached and reused.database == new_name
        (step,) = reused.load.pop("upgrades")
        assert step["applied"] == ["0013_packed_postings.sql"] and step["seconds"] >= 0
        assert reused.load == loaded.load  # the original load's figures are kept as they were
        with psycopg.connect(reused.dsn) as conn:
            assert conn.execute("SELECT pg_typeof(docnos)::text FROM ragfr_lex_blocks LIMIT 1").fetchone() == ("bytea",)
        assert upgrade.upgrade(pg_dsn, new_name) == new_name  # nothing left to apply: left as is
        # the before/after comparison tool reads the upgraded database: answers digested, blocks counted; two
        # runs of the same code on the same rows must digest alike, question by question
        asked = lexarm.run(reused.dsn, queries=8, rounds=2, seed=spec.seed)
        again = lexarm.run(reused.dsn, queries=8, rounds=2, seed=spec.seed)
        assert asked["questions"] and all(q["digest"] and q["blocks"] >= q["blocks_read"] > 0 for q in asked["questions"])
        assert len({q["digest"] for q in asked["questions"]}) > 1  # digests tell answers apart
        assert lexarm.compare(asked, again)["same_answers"] == len(asked["questions"])
    finally:
        store.drop(pg_dsn, old_name)
        store.drop(pg_dsn, new_name)
