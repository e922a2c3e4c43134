"""The model a migration moves to (or a rollback re-embeds with), loaded and probed for the dimension it
really returns before anything is written."""

from __future__ import annotations

from ragfr.embed import load_embedder, parse_spec
from ragfr.embmigrate.backfill import PassageEmbedder
from ragfr.errors import EmbeddingSpaceError

HNSW_MAX_DIMS = 2000  # pgvector 0.8: HNSW/IVFFlat index `vector` columns of at most 2,000 dimensions
PROBE_TEXT = "Ceci est une phrase de contrôle pour mesurer la dimension du modèle."


def load_target(spec: str, dims: int | None, batch: int) -> tuple[PassageEmbedder, int]:
    """The target embedder and the dimension it REALLY returns (one probe), checked against --dims."""
    embedder = load_embedder(parse_spec(spec), batch_size=batch, cache=False)
    probe = embedder.embed_passages([PROBE_TEXT])
    actual = len(probe[0])
    if dims is not None and dims != actual:
        raise EmbeddingSpaceError(
            f"--dims {dims} disagrees with {embedder.model_id}, which returns {actual}-dimensional vectors; "
            "nothing was changed"
        )
    if actual > HNSW_MAX_DIMS:
        raise EmbeddingSpaceError(
            f"{embedder.model_id} returns {actual} dimensions; pgvector's HNSW index takes at most {HNSW_MAX_DIMS}"
        )
    return embedder, actual
