"""The BEIR on-disk layout (corpus.jsonl, queries.jsonl, qrels/test.tsv), read and written in one place.

Two optional extensions are carried so that the golden set can test filtered retrieval without a second
format: a corpus line may have `metadata` (an object stored as the chunk's vmetadata) and a query line may
have `filters` (metadata equalities the query is run with) and `tags` (categories used to slice results,
e.g. `inflection`). Standard BEIR readers ignore unknown fields.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragfr.errors import ConfigError

QRELS_HEADER = ("query-id", "corpus-id", "score")


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    filters: Mapping[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()


# qrels[query_id][doc_id] = graded relevance (> 0 relevant).
Qrels = dict[str, dict[str, int]]


@dataclass(frozen=True)
class Dataset:
    name: str
    corpus: dict[str, Document]
    queries: dict[str, Query]
    qrels: Qrels

    def content_hash(self) -> str:
        """Hash of the corpus content only: queries and labels may change without re-ingesting."""
        digest = hashlib.sha256()
        for doc_id in sorted(self.corpus):
            doc = self.corpus[doc_id]
            record = [doc.id, doc.title, doc.text, dict(doc.metadata)]
            digest.update(json.dumps(record, ensure_ascii=False, sort_keys=True).encode())
            digest.update(b"\n")
        return digest.hexdigest()


def _read_jsonl(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise ConfigError(f"{path}: missing (BEIR needs corpus.jsonl, queries.jsonl, qrels/test.tsv)")
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict) or "_id" not in record:
                raise ConfigError(f"{path}:{lineno}: each line must be an object with an `_id`")
            yield lineno, record


def load_dataset(directory: str | Path) -> Dataset:
    """Read a BEIR directory; every qrel must point at a known query and document."""
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"{root}: dataset directory not found")
    corpus: dict[str, Document] = {}
    for lineno, rec in _read_jsonl(root / "corpus.jsonl"):
        doc_id = str(rec["_id"])
        if doc_id in corpus:
            raise ConfigError(f"{root / 'corpus.jsonl'}:{lineno}: duplicate _id {doc_id!r}")
        corpus[doc_id] = Document(doc_id, str(rec.get("title", "")), str(rec.get("text", "")),
                                  dict(rec.get("metadata") or {}))
    queries: dict[str, Query] = {}
    for lineno, rec in _read_jsonl(root / "queries.jsonl"):
        qid = str(rec["_id"])
        if qid in queries:
            raise ConfigError(f"{root / 'queries.jsonl'}:{lineno}: duplicate _id {qid!r}")
        queries[qid] = Query(qid, str(rec.get("text", "")), dict(rec.get("filters") or {}),
                             tuple(rec.get("tags") or ()))
    qrels = read_qrels(root / "qrels" / "test.tsv", corpus, queries)
    return Dataset(root.resolve().name, corpus, queries, qrels)


def read_qrels(path: Path, corpus: Mapping[str, Document], queries: Mapping[str, Query]) -> Qrels:
    if not path.is_file():
        raise ConfigError(f"{path}: missing qrels file")
    qrels: Qrels = {}
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header) != QRELS_HEADER:
            raise ConfigError(f"{path}: first line must be the tab-separated header {' '.join(QRELS_HEADER)}")
        for lineno, row in enumerate(reader, 2):
            if not row:
                continue
            if len(row) != 3:
                raise ConfigError(f"{path}:{lineno}: expected 3 tab-separated fields, got {len(row)}")
            qid, did, score = (c.strip() for c in row)
            if qid not in queries:
                raise ConfigError(f"{path}:{lineno}: unknown query-id {qid!r}")
            if did not in corpus:
                raise ConfigError(f"{path}:{lineno}: unknown corpus-id {did!r}")
            try:
                grade = int(score)
            except ValueError:
                raise ConfigError(f"{path}:{lineno}: score must be an integer, got {score!r}") from None
            qrels.setdefault(qid, {})[did] = grade
    return qrels


def write_dataset(dataset: Dataset, directory: str | Path) -> None:
    root = Path(directory)
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    with (root / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for doc in dataset.corpus.values():
            rec: dict[str, Any] = {"_id": doc.id, "title": doc.title, "text": doc.text}
            if doc.metadata:
                rec["metadata"] = dict(doc.metadata)
            handle.write(json.dumps(rec, ensure_ascii=False) + "\n")
    with (root / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for query in dataset.queries.values():
            qrec: dict[str, Any] = {"_id": query.id, "text": query.text}
            if query.filters:
                qrec["filters"] = dict(query.filters)
            if query.tags:
                qrec["tags"] = list(query.tags)
            handle.write(json.dumps(qrec, ensure_ascii=False) + "\n")
    with (root / "qrels" / "test.tsv").open("w", encoding="utf-8", newline="") as handle:
        handle.write("\t".join(QRELS_HEADER) + "\n")
        for qid, judged in dataset.qrels.items():
            for did, grade in judged.items():
                handle.write(f"{qid}\t{did}\t{grade}\n")
