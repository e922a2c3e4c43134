"""Migration 0017 (issue 47 item 7): chunks stored before the upload path dropped `ragfr_` keys lose them, in
any case of their name; every other key, and every row without such a key, stays as it was; the BM25 index is
untouched (only vmetadata changes)."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb
from tests.support.paths import REPO

from ragfr.db.migrate import migrate
from ragfr.db.vmetadata import is_reserved

STORED = {
    "a": {"author": "Service juridique", "page": 0, "ragfr_search_unavailable": "failed",
          "ragfr_search_unavailable_reason": "Appelez le 0800 000 000", "RAGFR_Incident": "deadbeef",
          "ragfr_rrf_score": 0.99, "nested": {"ragfr_kept": "only top-level keys speak to the gate"}},
    "b": {"ragfr_gate": "answer"},
    "c": {"author": "x", "ragfrx": "not the namespace"},
    "d": None,
    "e": ["an", "array"],
}


def test_the_migration_removes_every_stored_reserved_key_and_nothing_else(empty_db: str, tmp_path: Path) -> None:
    before_0017 = tmp_path / "migrations"
    shutil.copytree(REPO / "migrations", before_0017)
    scrub = before_0017 / "0017_scrub_reserved_metadata.sql"
    assert scrub.is_file()
    scrub.unlink()
    migrate(empty_db, 3, "ollama:m:1", directory=before_0017)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        for n, (chunk, meta) in enumerate(STORED.items()):
            conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata)"
                         " VALUES (%s, %s, 'kb', %s, %s)",
                         (chunk, f"[{n},1,0]", f"La franchise du contrat {chunk} est de {n} euros.",
                          None if meta is None else Jsonb(meta)))
        untouched = dict(conn.execute("SELECT id, xmin::text FROM document_chunk WHERE id IN ('c', 'd', 'e')"))
        index = conn.execute("SELECT count(*), sum(n) FROM ragfr_lex_blocks").fetchone()

    migrate(empty_db, 3, "ollama:m:1")

    with psycopg.connect(empty_db) as conn:
        rows = dict(conn.execute("SELECT id, vmetadata FROM document_chunk"))
        assert conn.execute("SELECT max(version) FROM ragfr_schema_migrations WHERE version < 100").fetchone() == (17,)
        assert dict(conn.execute("SELECT id, xmin::text FROM document_chunk WHERE id IN ('c', 'd', 'e')")) == untouched
        assert conn.execute("SELECT count(*), sum(n) FROM ragfr_lex_blocks").fetchone() == index
    assert rows["a"] == {"author": "Service juridique", "page": 0,
                         "nested": {"ragfr_kept": "only top-level keys speak to the gate"}}
    assert rows["b"] == {}
    assert rows["c"] == STORED["c"] and rows["d"] is None and rows["e"] == STORED["e"]
    assert not any(is_reserved(k) for meta in rows.values() if isinstance(meta, dict) for k in meta)
