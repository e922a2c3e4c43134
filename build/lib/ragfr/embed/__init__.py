"""Embedders named by a spec string (`ollama:MODEL`, `local:multilingual-e5-small`,
`local:use-multilingual`), with batching, L2 normalisation, a persistent cache and a query cache.

    emb = load_embedder("local:multilingual-e5-small")
    emb.embed_queries(["Comment déclarer un sinistre ?"])   # -> [[... 384 floats, unit norm]]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragfr.embed.base import Embedder
from ragfr.embed.cache import CACHE_FILE_NAME, EmbeddingCache, QueryLRU, default_cache_dir
from ragfr.embed.errors import EmbedderError
from ragfr.embed.space import EmbeddingSpace, check_space, read_space
from ragfr.embed.spec import LOCAL_MODELS, EmbedderSpec, parse_spec

__all__ = [
    "CACHE_FILE_NAME",
    "LOCAL_MODELS",
    "Embedder",
    "EmbedderError",
    "EmbedderSpec",
    "EmbeddingCache",
    "EmbeddingSpace",
    "QueryLRU",
    "check_space",
    "default_cache_dir",
    "load_embedder",
    "parse_spec",
    "read_space",
]


def load_embedder(
    spec: str | EmbedderSpec,
    *,
    batch_size: int | None = None,
    cache: bool | Path | EmbeddingCache = True,
    query_cache_size: int = 1024,
    ollama_host: str | None = None,
) -> Embedder:
    """Build the embedder a spec names.

    cache: True for the default persistent cache ($RAGFR_CACHE_DIR or ~/.cache/ragfr), a Path for a
    specific SQLite file, an EmbeddingCache to share one, or False for none.
    """
    parsed = spec if isinstance(spec, EmbedderSpec) else parse_spec(spec)
    kwargs: dict[str, Any] = {"query_cache_size": query_cache_size, "cache": _open_cache(cache)}
    if batch_size is not None:
        kwargs["batch_size"] = batch_size
    if parsed.backend == "ollama":
        from ragfr.embed.ollama_backend import OllamaEmbedder

        return OllamaEmbedder(parsed.model, host=ollama_host, **kwargs)
    from ragfr.embed.local import E5SmallEmbedder, UseMultilingualEmbedder

    if parsed.model == "multilingual-e5-small":
        return E5SmallEmbedder(**kwargs)
    return UseMultilingualEmbedder(**kwargs)


def _open_cache(cache: bool | Path | EmbeddingCache) -> EmbeddingCache | None:
    if isinstance(cache, EmbeddingCache):
        return cache
    if cache is True:
        return EmbeddingCache.open_default()
    if cache is False:
        return None
    return EmbeddingCache(Path(cache))
