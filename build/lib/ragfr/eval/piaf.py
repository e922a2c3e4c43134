"""PIAF (SQuAD v1 layout) to BEIR: each paragraph is a document, each question a query whose single
relevant document (grade 1) is the paragraph it was written on."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from ragfr.errors import ConfigError
from ragfr.eval.beir import Dataset, Document, Qrels, Query

# From ../shared/datasets/piaf/README.md (piaf-v1.1.json, psorianom/piaf-combo-huggingface @ 4504285).
PIAF_V11_SHA256 = "7f5b670ba07fed1ae093d7ff6b3be5529dce189d65e14cf81535ebbc4fcce54c"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def paragraph_id(title: str, context: str) -> str:
    """Content-derived id: stable if the file is re-ordered, and equal paragraphs would collapse."""
    return "piaf-" + hashlib.sha256(f"{title}\n{context}".encode()).hexdigest()[:16]


def load_piaf(path: str | Path, *, expected_sha256: str | None = PIAF_V11_SHA256) -> dict[str, Any]:
    src = Path(path)
    if not src.is_file():
        raise ConfigError(f"{src}: PIAF file not found")
    if expected_sha256 is not None:
        actual = sha256_file(src)
        if actual != expected_sha256:
            raise ConfigError(f"{src}: sha256 {actual} differs from the expected {expected_sha256}")
    try:
        data: dict[str, Any] = json.loads(src.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{src}: not valid JSON ({exc.msg})") from None
    if not isinstance(data.get("data"), list):
        raise ConfigError(f"{src}: not the SQuAD layout (no top-level `data` list)")
    return data


def piaf_to_beir(data: dict[str, Any], *, articles: int | None = None, seed: int = 0) -> Dataset:
    """Convert; with `articles`, keep a seeded random sample of whole articles (all their paragraphs stay
    in the corpus, so same-topic distractors remain) and only their questions."""
    entries = list(data["data"])
    if articles is not None:
        if not 0 < articles <= len(entries):
            raise ConfigError(f"--articles must be between 1 and {len(entries)}, got {articles}")
        keep = sorted(random.Random(seed).sample(range(len(entries)), articles))
        entries = [entries[i] for i in keep]
    corpus: dict[str, Document] = {}
    queries: dict[str, Query] = {}
    qrels: Qrels = {}
    for article in entries:
        title = str(article.get("title", ""))
        for paragraph in article.get("paragraphs", []):
            context = str(paragraph["context"])
            doc_id = paragraph_id(title, context)
            corpus[doc_id] = Document(doc_id, title, context, {"categorie": article.get("categorie", "")})
            for qa in paragraph.get("qas", []):
                qid = str(qa["id"])
                queries[qid] = Query(qid, str(qa["question"]).strip())
                qrels[qid] = {doc_id: 1}
    name = "piaf" if articles is None else f"piaf-{articles}a-s{seed}"
    return Dataset(name, corpus, queries, qrels)
