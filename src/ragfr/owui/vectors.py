"""Dimension check for vectors entering or querying document_chunk through Open WebUI."""

from __future__ import annotations

from collections.abc import Sequence

from ragfr import metrics
from ragfr.owui.errors import VectorLengthError


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
