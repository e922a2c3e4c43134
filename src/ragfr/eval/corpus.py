"""Putting a BEIR corpus into `document_chunk` through production ingestion, and mapping chunks back to
the documents they came from (a document's rank is the rank of its best chunk)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any, Protocol

import psycopg

from ragfr.embed import Embedder
from ragfr.errors import DatabaseError
from ragfr.eval.beir import Dataset
from ragfr.ingest.chunking import Chunk, ChunkConfig
from ragfr.ingest.documents import Document as IngestDocument
from ragfr.ingest.writer import IngestReport, ingest_documents

SOURCE_PREFIX = "beir:"


class Splitter(Protocol):
    """A chunker other than ragfr's: `chunker(texts)` splits every text up front (one call, e.g. one
    subprocess) and returns the per-text function the writer calls."""

    name: str

    def chunker(self, texts: list[str]) -> Callable[[str], list[Chunk]]: ...


def collection_name(dataset: Dataset, embedder_id: str, chunking: ChunkConfig, splitter: str = "ragfr") -> str:
    """Derived from everything that changes the stored chunks, so a changed corpus, model or chunking
    gets a fresh collection and an unchanged one is reused as is."""
    model = re.sub(r"[^a-z0-9]+", "-", embedder_id.lower()).strip("-")
    key = f"{dataset.content_hash()}/{embedder_id}/{chunking.size}/{chunking.overlap}"
    tag = ""
    if splitter != "ragfr":  # ragfr's own chunker keeps the historical names (existing collections reused)
        key += f"/{splitter}"
        tag = f"-{splitter[:12]}"
    return f"eval-{dataset.name[:24]}-{model[:32]}-c{chunking.size}o{chunking.overlap}{tag}-" + (
        hashlib.sha256(key.encode()).hexdigest()[:12]
    )


def to_ingest_documents(dataset: Dataset) -> list[IngestDocument]:
    """One source per BEIR document. The title heads the text, as it would head an uploaded file."""
    docs = []
    for doc in dataset.corpus.values():
        text = f"{doc.title}\n\n{doc.text}" if doc.title else doc.text
        docs.append(IngestDocument(text=text, source=SOURCE_PREFIX + doc.id, doc_id=doc.id, name=doc.title or doc.id,
                                   metadata=dict(doc.metadata)))
    return docs


def ensure_ingested(conn: psycopg.Connection[Any], dataset: Dataset, embedder: Embedder, chunking: ChunkConfig,
                    *, progress: bool = True, splitter: Splitter | None = None) -> tuple[str, IngestReport]:
    """Ingest (idempotently: chunks already stored are neither re-embedded nor rewritten). `splitter`:
    another chunker than ragfr's (e.g. Open WebUI's, ragfr_tools.eval.owui_chunking), with its name."""
    name = collection_name(dataset, embedder.model_id, chunking, splitter.name if splitter else "ragfr")
    docs = to_ingest_documents(dataset)
    chunker = splitter.chunker([d.text for d in docs]) if splitter else None
    report = ingest_documents(conn, name, docs, embedder, chunking, progress, chunker=chunker)
    return name, report


def chunk_documents(conn: psycopg.Connection[Any], collection: str) -> dict[str, str]:
    """chunk id -> BEIR document id, for every chunk of the collection."""
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT id, vmetadata->>'doc_id' FROM document_chunk WHERE collection_name = %s", (collection,)
            )
            rows = cur.fetchall()
    except psycopg.Error as exc:
        raise DatabaseError(f"cannot read the chunks of collection {collection!r}: {exc}") from exc
    return {str(chunk): str(doc) for chunk, doc in rows if doc is not None}


def documents_ranking(chunk_ranking: list[str], chunk_to_doc: dict[str, str]) -> list[str]:
    """Documents in the order of their best chunk; chunks of other collections are ignored."""
    seen: dict[str, None] = {}
    for chunk in chunk_ranking:
        doc = chunk_to_doc.get(chunk)
        if doc is not None and doc not in seen:
            seen[doc] = None
    return list(seen)
