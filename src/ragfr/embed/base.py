"""The Embedder contract shared by every backend: batching, L2 normalisation and both caches live here
once, so a backend only turns a batch of prepared texts into raw vectors."""

from __future__ import annotations

import logging
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Literal

import numpy as np

from ragfr.embed.cache import EmbeddingCache, QueryLRU, Vector
from ragfr.embed.errors import EmbedderError
from ragfr.errors import ConfigError

log = logging.getLogger(__name__)

Kind = Literal["query", "passage"]


class Embedder(ABC):
    """`model_id` (canonical spec), `dims`, `embed_queries(texts)`, `embed_passages(texts)`.

    Vectors come back as lists of floats, L2-normalised, so cosine similarity is their dot product and
    pgvector's `vector_cosine_ops` ranks them exactly as the model intends.
    """

    def __init__(
        self,
        model_id: str,
        *,
        batch_size: int = 32,
        cache: EmbeddingCache | None = None,
        query_cache_size: int = 1024,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"embedding batch size must be at least 1, got {batch_size}")
        self.model_id = model_id
        self.batch_size = batch_size
        self.cache = cache
        self.query_lru = QueryLRU(query_cache_size)
        self.backend_calls = 0  # batches actually sent to the model: lets callers see what caches saved

    # Tokens the model reads per text; None when ragfr does not know it (Ollama models, USE).
    max_input_tokens: int | None = None

    @property
    @abstractmethod
    def dims(self) -> int: ...

    @abstractmethod
    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        """Raw vectors, one row per text, for at most `batch_size` texts."""

    def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        out: list[Vector | None] = [self.query_lru.get(t) for t in texts]
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            fresh = self._embed_cached([texts[i] for i in missing], "query")
            for i, vector in zip(missing, fresh, strict=True):
                self.query_lru.put(texts[i], vector)
                out[i] = vector
        return [v for v in out if v is not None]

    def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        return self._embed_cached(list(texts), "passage")

    def _embed_cached(self, texts: list[str], kind: Kind) -> list[Vector]:
        for text in texts:
            _check_text(text)
        if not texts:
            return []
        out: list[Vector | None] = (
            self.cache.get_many(self.model_id, self.dims, kind, texts) if self.cache else [None] * len(texts)
        )
        # Each distinct missing text is embedded once, even if it repeats within the request.
        todo = list(dict.fromkeys(t for t, v in zip(texts, out, strict=True) if v is None))
        computed: dict[str, Vector] = {}
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start : start + self.batch_size]
            vectors = self._normalised(self._embed_batch(batch, kind), len(batch))
            computed.update(zip(batch, vectors, strict=True))
            if self.cache:
                try:
                    self.cache.put_many(self.model_id, self.dims, kind, batch, vectors)
                except sqlite3.Error as exc:  # a full disk must not stop embedding, only caching
                    log.warning("embedding cache write failed (%s); continuing without caching", exc)
        return [v if v is not None else list(computed[t]) for t, v in zip(texts, out, strict=True)]

    def _normalised(self, raw: np.ndarray, expected_rows: int) -> list[Vector]:
        self.backend_calls += 1
        matrix = np.asarray(raw, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape != (expected_rows, self.dims):
            raise EmbedderError(
                f"{self.model_id} returned vectors of shape {matrix.shape}, "
                f"expected ({expected_rows}, {self.dims})"
            )
        norms = np.linalg.norm(matrix, axis=1)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise EmbedderError(f"{self.model_id} returned a zero or non-finite vector")
        unit = (matrix / norms[:, None]).astype(np.float32)
        return [row.tolist() for row in unit]


def _check_text(text: str) -> None:
    if not isinstance(text, str):
        raise ConfigError(f"texts to embed must be strings, got {type(text).__name__}")
    # The native backends read C strings: a NUL would silently cut the text, so it is refused instead.
    if "\0" in text:
        raise ConfigError("text to embed contains a NUL byte")
