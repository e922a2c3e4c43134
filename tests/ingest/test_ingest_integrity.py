"""`ragfr ingest` stores nothing wrong and nothing half: unstorable characters and bad names refused with
where they are, file sizes checked before any write, files stored one at a time, and an embedding space
that changes while the ingest embeds aborts it cleanly. Real database, real e5 model."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import psycopg
import pytest

from ragfr.cli import main
from ragfr.embed import load_embedder
from ragfr.errors import ConfigError, EmbeddingSpaceError
from ragfr.ingest import ChunkConfig, ingest_documents, load_file

E5 = "local:multilingual-e5-small"
TEXT = "Article 3\nLe vol doit être déclaré sous 48 heures à l'assureur."


@pytest.fixture
def dsn(migrated_db: Callable[..., str]) -> str:
    return migrated_db(dims=384, model=E5)


def _count(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        return int(conn.execute("SELECT count(*) FROM document_chunk").fetchone()[0])  # type: ignore[index]


def _ingest(dsn: str, *args: str) -> int:
    return main(["ingest", "--dsn", dsn, "--collection", "c", "--no-progress", *args])


def test_nul_in_jsonl_metadata_is_refused_with_file_line_and_field(dsn: str, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "faq.jsonl"
    bad.write_text('{"id": 1, "text": "Bonjour", "metadata": {"titre": "a\\u0000b"}}\n', encoding="utf-8")
    assert _ingest(dsn, str(bad)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"ragfr: error: {bad}:1: \"metadata\".titre contains a NUL character") and "\n" not in err
    assert _count(dsn) == 0


def test_a_file_name_that_is_not_utf8_is_refused_by_its_bytes(dsn: str, tmp_path: Path, capsys) -> None:
    raw = os.fsencode(tmp_path) + b"/contrat-\xe9t\xe9.txt"  # Latin-1 'été'
    with open(raw, "wb") as handle:
        handle.write(TEXT.encode())
    assert _ingest(dsn, str(tmp_path)) == 2
    err = capsys.readouterr().err.strip()
    assert "contrat-\\xe9t\\xe9.txt" in err and "the file name is not valid UTF-8" in err and "\n" not in err
    assert _count(dsn) == 0


def test_an_oversized_file_is_refused_before_anything_is_written(dsn: str, tmp_path: Path, capsys) -> None:
    (tmp_path / "a-small.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "b-big.txt").write_text("Une phrase de contrat. " * 60_000, encoding="utf-8")  # 1.4 MB
    assert _ingest(dsn, "--max-file-size", "1", str(tmp_path)) == 2
    err = capsys.readouterr().err.strip()
    assert "b-big.txt: 1.4 MB is over --max-file-size 1 MB; nothing was ingested" in err
    assert _count(dsn) == 0  # the small file, listed first, was not written either


def test_files_are_stored_one_at_a_time(dsn: str, tmp_path: Path, capsys) -> None:
    """An unreadable second file leaves the first stored; a re-run after the fix stores only the rest."""
    (tmp_path / "a.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "b.txt").write_bytes(b"\xff\xfe pas de l'UTF-8")
    assert _ingest(dsn, str(tmp_path)) == 2
    assert "b.txt: not valid UTF-8" in capsys.readouterr().err
    stored = _count(dsn)
    assert stored >= 1
    (tmp_path / "b.txt").write_text("Article 4\nLa franchise est de 150 euros.", encoding="utf-8")
    assert _ingest(dsn, str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert f"{stored} already present" in out and _count(dsn) > stored


def test_a_damaged_pdf_is_one_line(dsn: str, tmp_path: Path) -> None:
    pdf = tmp_path / "abime.pdf"
    pdf.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF")
    with pytest.raises(ConfigError, match=r"abime\.pdf: cannot read PDF"):
        load_file(pdf)


class _SwitchWhileEmbedding:
    """The real e5 embedder; on its first call an embedding migration's switch commits (another session
    rewrites the space row as `swap` does). Only the timing is arranged."""

    def __init__(self, dsn: str) -> None:
        self.inner = load_embedder(E5, cache=False)
        self.model_id, self.dims, self.batch_size = self.inner.model_id, self.inner.dims, self.inner.batch_size
        self.max_input_tokens = getattr(self.inner, "max_input_tokens", None)
        self.dsn = dsn

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        with psycopg.connect(self.dsn, autocommit=True) as other:
            other.execute("UPDATE ragfr_embedding_space SET model = 'ollama:other-model',"
                          " updated_at = clock_timestamp()")
        return self.inner.embed_passages(texts)


def test_a_switch_while_embedding_aborts_the_ingest_cleanly(dsn: str, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(TEXT, encoding="utf-8")
    with psycopg.connect(dsn) as conn, pytest.raises(EmbeddingSpaceError) as err:
        ingest_documents(conn, "c", load_file(tmp_path / "a.txt"), _SwitchWhileEmbedding(dsn), ChunkConfig(),
                         progress=False)
    assert str(err.value).startswith("the embedding space changed to ollama:other-model (384 dims) while this "
                                     "ingest embedded with local:multilingual-e5-small: nothing more was written")
    assert _count(dsn) == 0
