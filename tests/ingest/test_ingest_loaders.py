"""Loaders for .txt, .md, .pdf (a real PDF built by pdf_fixture) and .jsonl, and their one-line errors."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from tests.support.pdf_fixture import make_pdf

from ragfr.errors import ConfigError
from ragfr.ingest import Document, iter_files, load_file


def test_text_and_markdown_are_one_document_with_normalised_text(tmp_path: Path) -> None:
    decomposed = unicodedata.normalize("NFD", "Sinistre déclaré\r\nà l'assureur\x00\x07 fin")
    (tmp_path / "a.txt").write_text(decomposed, encoding="utf-8")
    (tmp_path / "b.md").write_text("# Titre\n\nCorps.", encoding="utf-8")
    (doc,) = load_file(tmp_path / "a.txt")
    assert doc.text == "Sinistre déclaré\nà l'assureur   fin"  # NFC, \n, control characters blanked
    assert doc.source == str((tmp_path / "a.txt").resolve()) and doc.name == "a.txt" and doc.doc_id == ""
    assert load_file(tmp_path / "b.md")[0].text == "# Titre\n\nCorps."


def test_pdf_gives_one_document_per_page_with_text(tmp_path: Path) -> None:
    path = tmp_path / "cg.pdf"
    path.write_bytes(make_pdf([["Article 1", "Le sinistre est déclaré à l'assureur."], [], ["Résiliation."]]))
    docs = load_file(path)
    assert [d.doc_id for d in docs] == ["page-0", "page-2"]  # the blank page yields nothing
    assert "déclaré à l'assureur" in docs[0].text and docs[1].text.strip() == "Résiliation."
    assert docs[1].metadata == {"page": 2, "page_label": "3", "total_pages": 3}
    assert all(d.name == "cg.pdf" for d in docs)


def test_pdf_errors(tmp_path: Path) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a pdf")
    with pytest.raises(ConfigError, match=r"broken\.pdf: cannot read PDF"):
        load_file(tmp_path / "broken.pdf")
    (tmp_path / "scan.pdf").write_bytes(make_pdf([[], []]))
    with pytest.raises(ConfigError, match=r"scan\.pdf: no extractable text"):
        load_file(tmp_path / "scan.pdf")


def test_jsonl_records(tmp_path: Path) -> None:
    path = tmp_path / "faq.jsonl"
    lines = [
        {"id": "q1", "text": "Comment déclarer un sinistre ?", "metadata": {"lang": "fr", "year": 2024}},
        {"id": 2, "text": "Délai de résiliation.", "metadata": {"name": "FAQ résiliation"}},
        {"id": "q3", "text": ""},
    ]
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n\n", encoding="utf-8")
    docs = load_file(path)
    assert [(d.doc_id, d.name) for d in docs] == [("q1", "faq.jsonl"), ("2", "FAQ résiliation"), ("q3", "faq.jsonl")]
    assert docs[0].metadata == {"lang": "fr", "year": 2024}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "a", "text": "x"', "invalid JSON"),
        ('["a", "x"]', "expected an object"),
        ('{"text": "x"}', '"id" must be'),
        ('{"id": true, "text": "x"}', '"id" must be'),
        ('{"id": "a"}', '"text" must be a string'),
        ('{"id": "a", "text": "x", "metadata": [1]}', '"metadata" must be an object'),
        ('{"id": "a", "text": "x", "meta": {}}', "unknown field"),
        ('{"id": "ok", "text": "x"}', "duplicate id"),
    ],
)
def test_jsonl_errors_name_the_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "ok", "text": "fine"}\n\n' + line + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as err:
        load_file(path)
    assert str(err.value).startswith(f"{path}:3: ")


def test_file_discovery_and_errors(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("b.txt", "a.md", "sub/c.jsonl", "sub/d.PDF", "e.docx"):
        (tmp_path / name).write_text("x", encoding="utf-8")
    assert [p.relative_to(tmp_path).as_posix() for p in iter_files([tmp_path])] == [
        "a.md", "b.txt", "sub/c.jsonl", "sub/d.PDF"
    ]
    with pytest.raises(ConfigError, match=r"unsupported file type '\.docx'"):
        list(iter_files([tmp_path / "e.docx"]))
    with pytest.raises(ConfigError, match="no such file"):
        list(iter_files([tmp_path / "missing.txt"]))
    (tmp_path / "latin1.txt").write_bytes("déclaré".encode("latin-1"))
    with pytest.raises(ConfigError, match="not valid UTF-8"):
        load_file(tmp_path / "latin1.txt")


def test_document_defaults() -> None:
    doc = Document(text="texte", source="/data/contrats/cg.txt")
    assert doc.name == "cg.txt" and doc.metadata == {}
