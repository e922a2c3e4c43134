"""Chunk ids: a function of where a chunk lives and what it says, so that ingesting the same content
again yields the same ids (and adds nothing), while any change of text yields new ones."""

from __future__ import annotations

import hashlib
import uuid

# Fixed namespace for ragfr chunk ids (uuid5 of the project name); never change it, or every
# re-ingestion would duplicate every chunk.
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://ragfr/chunk")


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_id(collection: str, source: str, doc_id: str, text: str, occurrence: int = 0) -> str:
    """UUID (the shape Open WebUI gives its own chunk ids) derived from collection, source, document id
    and the SHA-256 of the chunk text. `occurrence` tells apart identical chunks of one document (a
    repeated boilerplate paragraph) without tying ids to positions: inserting a paragraph at the top of
    a file keeps every other chunk's id."""
    name = "\0".join((collection, source, doc_id, content_hash(text), str(occurrence)))
    return str(uuid.uuid5(_NAMESPACE, name))
