"""Embedding caches: a persistent SQLite store for every text ever embedded, and an in-process LRU for
queries.

The persistent cache is a local SQLite file rather than a PostgreSQL table so that it also serves runs
with no database (evaluation, benchmarks) and never competes with retrieval traffic. A cached vector is
only ever returned for the model that produced it: the key hashes the model id, and the row repeats the
model and the dimension, which are checked again on every read together with the vector's own shape.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import sqlite3
import struct
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from ragfr.errors import ConfigError

log = logging.getLogger(__name__)

Vector = list[float]

CACHE_FILE_NAME = "embeddings.sqlite3"
# A stored vector whose norm strays further than this from 1 did not come from our writer (every vector
# we store is L2-normalised): it is refused like any other foreign row.
_NORM_TOLERANCE = 1e-3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embedding (
    key    TEXT PRIMARY KEY,
    model  TEXT NOT NULL,
    kind   TEXT NOT NULL,
    dims   INTEGER NOT NULL,
    vector BLOB NOT NULL
)
"""


def default_cache_dir() -> Path:
    """`$RAGFR_CACHE_DIR`, else `~/.cache/ragfr`."""
    env = os.environ.get("RAGFR_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "ragfr"


def cache_key(model_id: str, kind: str, text: str) -> str:
    """SHA-256 of model id, kind and text, NUL-separated so no two triples can collide by concatenation."""
    h = hashlib.sha256()
    h.update(model_id.encode("utf-8"))
    h.update(b"\0")
    h.update(kind.encode("utf-8"))
    h.update(b"\0")
    h.update(text.encode("utf-8"))
    return h.hexdigest()


def _pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


def _unpack(blob: bytes, dims: int) -> Vector | None:
    if not isinstance(blob, bytes) or len(blob) != 4 * dims:
        return None
    values = list(struct.unpack(f"<{dims}f", blob))
    norm = math.sqrt(math.fsum(v * v for v in values))
    if not math.isfinite(norm) or abs(norm - 1.0) > _NORM_TOLERANCE:
        return None
    return values


class EmbeddingCache:
    """Persistent vectors keyed by SHA-256(model id, kind, text); safe for several processes at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # check_same_thread=False: one embedder may be shared by worker threads (Open WebUI runs
            # queries in a thread pool); the lock below serialises access.
            self._db = sqlite3.connect(path, timeout=30, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"cannot open the embedding cache {path}: {exc} (set RAGFR_CACHE_DIR to a writable folder)"
            ) from exc
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.refused = 0

    @classmethod
    def open_default(cls) -> EmbeddingCache:
        return cls(default_cache_dir() / CACHE_FILE_NAME)

    def get_many(self, model_id: str, dims: int, kind: str, texts: Sequence[str]) -> list[Vector | None]:
        """Cached vectors in the order of `texts`; None where absent or refused."""
        keys = [cache_key(model_id, kind, t) for t in texts]
        found: dict[str, tuple[str, str, int, bytes]] = {}
        with self._lock:
            # SQLite caps host parameters per statement; 500 stays under every build's limit.
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT key, model, kind, dims, vector FROM embedding WHERE key IN ({marks})",  # noqa: S608
                    part,
                ).fetchall()
                for key, model, row_kind, row_dims, blob in rows:
                    found[key] = (model, row_kind, row_dims, blob)
        out: list[Vector | None] = []
        for key in keys:
            row = found.get(key)
            vector = None
            if row is not None:
                model, row_kind, row_dims, blob = row
                if model == model_id and row_kind == kind and row_dims == dims:
                    vector = _unpack(blob, dims)
                if vector is None:
                    self.refused += 1
                    log.warning(
                        "embedding cache %s: refused entry %s "
                        "(model %r, kind %r, dims %r; wanted %r, %r, %r)",
                        self.path, key[:12], model, row_kind, row_dims, model_id, kind, dims,
                    )
            if vector is None:
                self.misses += 1
            else:
                self.hits += 1
            out.append(vector)
        return out

    def put_many(
        self, model_id: str, dims: int, kind: str, texts: Sequence[str], vectors: Sequence[Vector]
    ) -> None:
        rows = [
            (cache_key(model_id, kind, t), model_id, kind, dims, _pack(v))
            for t, v in zip(texts, vectors, strict=True)
        ]
        with self._lock:
            # INSERT OR REPLACE: a refused (corrupt or foreign) row is overwritten by the fresh vector.
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    "INSERT OR REPLACE INTO embedding (key, model, kind, dims, vector) "
                    "VALUES (?, ?, ?, ?, ?)",
                    rows,
                )
                self._db.execute("COMMIT")
            except sqlite3.Error:
                self._db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._lock:
            self._db.close()


class QueryLRU:
    """In-process LRU of query vectors: repeated questions skip even the SQLite lookup."""

    def __init__(self, capacity: int = 1024) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> Vector | None:
        with self._lock:
            item = self._items.get(text)
            if item is None:
                return None
            self._items.move_to_end(text)
        # A fresh list each time: a caller that mutates its vector must not poison the cache.
        return list(item)

    def put(self, text: str, vector: Sequence[float]) -> None:
        if self.capacity <= 0:
            return
        with self._lock:
            self._items[text] = tuple(vector)
            self._items.move_to_end(text)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
