"""ingest_documents and `ragfr ingest` against a real migrated database (our pgvector build) with the
real e5 model: rows Open WebUI's schema holds, idempotence without re-embedding, replacement of a
changed source, metadata updates, and refusals."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from ragfr.cli import main
from ragfr.embed import load_embedder
from ragfr.errors import ConfigError, EmbeddingSpaceError
from ragfr.ingest import ChunkConfig, Document, chunk_text, ingest_documents

E5 = "local:multilingual-e5-small"
CONFIG = ChunkConfig(size=200, overlap=40)
ARTICLES = [
    "Article 1\nLe présent contrat est conclu entre M. Dupont et la société Assurix pour une durée d'un an.",
    "Article 2\nL'assuré déclare le sinistre à l'assureur dans les cinq jours ouvrés. Passé ce délai, "
    "l'assureur peut refuser la garantie.",
    "Article 3\nLa franchise reste à la charge de l'assuré. Son montant figure aux conditions particulières.",
]


@pytest.fixture
def dsn(migrated_db: Callable[..., str]) -> str:
    return migrated_db(dims=384, model=E5)


def _rows(dsn: str, collection: str = "contrats") -> dict[str, dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT id, text, vmetadata, embedding_model, vector::text FROM document_chunk "
            "WHERE collection_name = %s",
            (collection,),
        ).fetchall()
    return {r[0]: {"text": r[1], "meta": r[2], "model": r[3], "vector": r[4]} for r in rows}


def test_rows_idempotence_and_replacement(dsn: str) -> None:
    embedder = load_embedder(E5, cache=False)  # no cache: a skipped chunk must cost no model call at all
    doc = Document(text="\n\n".join(ARTICLES), source="/data/contrat.md", metadata={"branche": "habitation"})
    expected = [c.text for c in chunk_text(doc.text, CONFIG)]
    with psycopg.connect(dsn) as conn:
        report = ingest_documents(conn, "contrats", [doc], embedder, CONFIG, progress=False,
                                  metadata={"lang": "fr"})
    assert report.inserted == report.chunks == len(expected) >= 3
    rows = _rows(dsn)
    assert sorted(r["text"] for r in rows.values()) == sorted(expected)
    for row in rows.values():
        meta = row["meta"]
        assert meta["source"] == "/data/contrat.md" and meta["name"] == "contrat.md"
        assert meta["lang"] == "fr" and meta["branche"] == "habitation"
        assert expected[meta["chunk_index"]] == row["text"]
        assert doc.text[meta["start_index"] :].startswith(row["text"])
        assert meta["embedding_config"] == {"engine": "ragfr", "model": E5} and row["model"] == E5
        stored = np.array([float(x) for x in row["vector"].strip("[]").split(",")])
        np.testing.assert_allclose(stored, embedder.embed_passages([row["text"]])[0], atol=1e-6)
    calls = embedder.backend_calls

    # Same content again: nothing embedded, nothing written.
    with psycopg.connect(dsn) as conn:
        again = ingest_documents(conn, "contrats", [doc], embedder, CONFIG, progress=False, metadata={"lang": "fr"})
    assert (again.inserted, again.unchanged, again.deleted, again.updated) == (0, len(expected), 0, 0)
    assert embedder.backend_calls == calls and _rows(dsn).keys() == rows.keys()

    # Article 2 rewritten: its chunks replaced, the others kept (same ids), only the new text embedded.
    changed = Document(text=doc.text.replace("cinq jours ouvrés", "dix jours"), source=doc.source,
                       metadata=doc.metadata)
    with psycopg.connect(dsn) as conn:
        third = ingest_documents(conn, "contrats", [changed], embedder, CONFIG, progress=False,
                                 metadata={"lang": "fr"})
    after = _rows(dsn)
    assert third.deleted >= 1 and third.inserted == third.deleted
    assert not any("cinq jours" in r["text"] for r in after.values())
    assert any("dix jours" in r["text"] for r in after.values())
    kept = set(rows) & set(after)
    assert kept and all("Article 2" not in rows[i]["text"] for i in kept)
    new_ids = set(after) - set(rows)
    assert len(new_ids) == third.inserted and all(
        "dix jours" in after[i]["text"] or "Article 2" in after[i]["text"] for i in new_ids
    )
    assert embedder.backend_calls - calls == 1  # one batch, holding only the changed chunks


def test_new_metadata_is_applied_without_re_embedding(dsn: str) -> None:
    embedder = load_embedder(E5, cache=False)
    doc = Document(text=ARTICLES[0], source="/data/a.txt")
    with psycopg.connect(dsn) as conn:
        ingest_documents(conn, "contrats", [doc], embedder, CONFIG, progress=False, metadata={"year": 2023})
        calls = embedder.backend_calls
        report = ingest_documents(conn, "contrats", [doc], embedder, CONFIG, progress=False, metadata={"year": 2024})
    assert report.updated == report.chunks and report.inserted == 0 and embedder.backend_calls == calls
    assert {r["meta"]["year"] for r in _rows(dsn).values()} == {2024}


def test_collections_are_separate(dsn: str) -> None:
    embedder = load_embedder(E5, cache=False)
    doc = Document(text=ARTICLES[2], source="/data/a.txt")
    with psycopg.connect(dsn) as conn:
        one = ingest_documents(conn, "A", [doc], embedder, CONFIG, progress=False)
        two = ingest_documents(conn, "B", [doc], embedder, CONFIG, progress=False)
    assert one.inserted == two.inserted == 1
    assert _rows(dsn, "A").keys().isdisjoint(_rows(dsn, "B").keys())


def test_refusals(dsn: str) -> None:
    doc = Document(text=ARTICLES[0], source="/data/a.txt")
    with psycopg.connect(dsn) as conn:
        with pytest.raises(EmbeddingSpaceError, match="local:use-multilingual"):
            ingest_documents(conn, "c", [doc], load_embedder("local:use-multilingual", cache=False), progress=False)
        e5 = load_embedder(E5, cache=False)
        with pytest.raises(ConfigError, match="reserved metadata key.*source"):
            ingest_documents(conn, "c", [doc], e5, progress=False, metadata={"source": "x"})
        # The chat's evidence gate reads ragfr_ keys: no document may store one (issue 38), whatever the case.
        with pytest.raises(ConfigError, match="ragfr_search_unavailable.*reserved for what the chat's evidence"):
            ingest_documents(conn, "c", [doc], e5, progress=False, metadata={"ragfr_search_unavailable": "failed"})
        gated = Document(text=ARTICLES[0], source="/data/a.txt", metadata={"RAGFR_rrf_score": 1.0})
        with pytest.raises(ConfigError, match="a.txt sets metadata key.*RAGFR_rrf_score"):
            ingest_documents(conn, "c", [gated], e5, progress=False)
        with pytest.raises(ConfigError, match="collection name"):
            ingest_documents(conn, " ", [doc], e5, progress=False)
        with pytest.raises(ConfigError, match="appears twice"):
            ingest_documents(conn, "c", [doc, doc], e5, progress=False)
    assert _rows(dsn, "c") == {}


def test_cli_ingests_files_with_the_stored_space_model(dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGFR_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "contrat.md").write_text("\n\n".join(ARTICLES), encoding="utf-8")
    (tmp_path / "docs" / "faq.jsonl").write_text('{"id": "q1", "text": "Délai de résiliation : deux mois."}\n',
                                                 encoding="utf-8")
    args = ["ingest", "--dsn", dsn, "--collection", "cli", "--meta", "year:=2024", "--meta", "lang=fr",
            "--no-progress", str(tmp_path / "docs")]
    assert main(args) == 0
    assert "2 file(s), 2 document(s)" in capsys.readouterr().out
    rows = _rows(dsn, "cli")
    assert len(rows) >= 2 and all(r["model"] == E5 and r["meta"]["year"] == 2024 for r in rows.values())
    assert main(args) == 0
    assert "0 added" in capsys.readouterr().out and _rows(dsn, "cli").keys() == rows.keys()

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "ok"}\n{oops\n', encoding="utf-8")
    assert main(["ingest", "--dsn", dsn, "--collection", "cli", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ragfr: error: ") and f"{bad}:2: invalid JSON" in err and "\n" not in err
    assert main(["ingest", "--dsn", dsn, "--collection", "cli", "--embedder", "local:use-multilingual",
                 str(tmp_path / "docs")]) == 2
    assert "does not match the database's embedding space" in capsys.readouterr().err
    assert main(["ingest", "--dsn", dsn, "--collection", "cli", "--meta", "novalue", str(bad)]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
