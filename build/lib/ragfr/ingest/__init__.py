"""Ingestion: load documents, chunk them (the one chunker production and evaluation share), embed and
store them in `document_chunk` idempotently.

    from ragfr.ingest import ChunkConfig, Document, chunk_text, ingest_documents
"""

from ragfr.ingest.chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, Chunk, ChunkConfig, chunk_text
from ragfr.ingest.documents import SUPPORTED_SUFFIXES, Document, iter_files, load_file, normalise_text
from ragfr.ingest.ids import chunk_id, content_hash
from ragfr.ingest.writer import RESERVED_KEYS, IngestReport, ingest_documents

__all__ = [
    "DEFAULT_CHUNK_OVERLAP",
    "DEFAULT_CHUNK_SIZE",
    "RESERVED_KEYS",
    "SUPPORTED_SUFFIXES",
    "Chunk",
    "ChunkConfig",
    "Document",
    "IngestReport",
    "chunk_id",
    "chunk_text",
    "content_hash",
    "ingest_documents",
    "iter_files",
    "load_file",
    "normalise_text",
]
