"""What enters or queries document_chunk through Open WebUI: the vectors' dimension, and no `ragfr_` key in a
chunk's metadata."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ragfr import metrics
from ragfr.db.vmetadata import reserved_keys, without_reserved
from ragfr.owui.runtime.errors import VectorLengthError

log = logging.getLogger("ragfr.owui")


def require_vector_length(vector: Sequence[float], expected: int) -> list[float]:
    """The vector unchanged when it has `expected` dimensions; otherwise a clear refusal.

    Open WebUI 0.12.4 zero-pads shorter vectors and truncates longer ones. A different length means a
    different embedding model, whose vectors are meaningless next to the stored ones, so padding would
    corrupt the index silently.
    """
    if len(vector) != expected:
        metrics.space_mismatch("dimension")
        raise VectorLengthError(
            f"embedding has {len(vector)} dimensions but document_chunk.vector holds {expected} "
            "(PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH): RAG_EMBEDDING_MODEL does not match the embedding space "
            "of the database; refusing to pad or truncate (change models with `ragfr embeddings migrate`)"
        )
    return list(vector)


def without_reserved_metadata(items: Sequence[Any], collection_name: str) -> list[Any]:
    """Open WebUI's chunks about to be written, each without any `ragfr_` metadata key (ragfr.db.vmetadata).

    Open WebUI stores what its loaders read: its PDF loader copies every key of the file's Info dictionary,
    so a PDF holding `/ragfr_search_unavailable` would store a key the chat's evidence gate reads. The
    adapter drops such keys when reading too; here they never reach the table. Logged, with the keys."""
    out: list[Any] = []
    dropped: set[str] = set()
    for item in items:
        meta = item.get("metadata") if isinstance(item, Mapping) else None
        found = reserved_keys(meta) if isinstance(meta, Mapping) else []
        if found:
            dropped.update(found)
            item = {**item, "metadata": without_reserved(meta)}
        out.append(item)
    if dropped:
        log.warning(json.dumps({"event": "reserved_metadata_dropped", "collection": collection_name,
                                "keys": sorted(dropped)}, ensure_ascii=False))
    return out
