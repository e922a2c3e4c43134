"""Embeddings from an Ollama server through the official `ollama` client (`/api/embed`)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ragfr.embed.base import Embedder, Kind
from ragfr.embed.errors import EmbedderError

DEFAULT_HOST = "http://127.0.0.1:11434"


class OllamaEmbedder(Embedder):
    """`ollama:MODEL`. The host comes from `host=` or `OLLAMA_HOST`. The dimension is not known in
    advance, so the constructor makes one probe call; that also turns a stopped server or a model that was
    never pulled into an error at startup rather than in the middle of an ingestion."""

    def __init__(self, model: str, *, host: str | None = None, timeout: float = 120.0, **kwargs: Any) -> None:
        kwargs.setdefault("batch_size", 64)
        super().__init__(f"ollama:{model}", **kwargs)
        import httpx
        import ollama

        self.model = model
        self.host = host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST
        self._ollama = ollama
        self._timeout_error = httpx.TimeoutException
        self.timeout = timeout
        self._client = ollama.Client(host=self.host, timeout=timeout)
        self._dims = 0
        self._dims = int(self._call(["dimension probe"]).shape[1])

    @property
    def dims(self) -> int:
        return self._dims

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        return self._call(texts)

    def _call(self, texts: list[str]) -> np.ndarray:
        try:
            # truncate=False: a text longer than the model's context is an error to report, not a vector
            # that silently covers only its beginning.
            response = self._client.embed(model=self.model, input=texts, truncate=False)
        except ConnectionError as exc:
            raise EmbedderError(
                f"cannot reach Ollama at {self.host} for {self.model_id}: is the server running? "
                "(set OLLAMA_HOST to its address)"
            ) from exc
        except self._timeout_error as exc:
            raise EmbedderError(
                f"Ollama at {self.host} did not answer within {self.timeout:g} s "
                f"embedding {len(texts)} texts with {self.model!r}"
            ) from exc
        except self._ollama.ResponseError as exc:
            if exc.status_code == 404:
                raise EmbedderError(
                    f"Ollama at {self.host} has no model {self.model!r} ({exc.error}); "
                    f"pull it first: ollama pull {self.model}"
                ) from exc
            raise EmbedderError(
                f"Ollama at {self.host} refused to embed with {self.model!r}: "
                f"HTTP {exc.status_code}: {exc.error}"
            ) from exc
        matrix = np.asarray(response.embeddings, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[0] != len(texts) or matrix.shape[1] == 0:
            raise EmbedderError(
                f"Ollama at {self.host} returned {matrix.shape[0] if matrix.ndim else 0} vectors "
                f"for {len(texts)} texts with {self.model!r}"
            )
        return matrix
