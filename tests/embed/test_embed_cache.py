"""The persistent cache (SQLite) and the query LRU, with the real offline models: hits return the very
same vectors without calling the model; one model never receives another's vector; damaged or foreign
rows are refused and replaced."""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

import pytest

from ragfr.embed import EmbeddingCache, load_embedder
from ragfr.embed.cache import cache_key, default_cache_dir

TEXTS = ["Le sinistre doit être déclaré sous cinq jours.", "La franchise reste à la charge de l'assuré."]
E5 = "local:multilingual-e5-small"
USE = "local:use-multilingual"


def test_hits_return_identical_vectors_without_model_calls(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    first = load_embedder(E5, cache=path)
    fresh = first.embed_passages(TEXTS)
    assert first.backend_calls == 1
    # A new embedder (a new process, in effect) reads the file: same floats, bit for bit, no model call.
    second = load_embedder(E5, cache=path)
    assert second.embed_passages(TEXTS) == fresh
    assert second.backend_calls == 0 and second.cache is not None and second.cache.hits == 2


def test_kind_is_part_of_the_key(tmp_path: Path) -> None:
    embedder = load_embedder(E5, cache=tmp_path / "c.sqlite3")
    passages = embedder.embed_passages(TEXTS)
    queries = embedder.embed_queries(TEXTS)  # e5 prefixes differ: must not be served the passage vectors
    assert embedder.backend_calls == 2 and queries != passages


def test_models_sharing_one_cache_never_see_each_other(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "shared.sqlite3")
    e5 = load_embedder(E5, cache=cache)
    use = load_embedder(USE, cache=cache)
    e5_vectors = e5.embed_passages(TEXTS)
    use_vectors = use.embed_passages(TEXTS)
    assert use.backend_calls == 1  # nothing of e5's was served to USE
    assert len(e5_vectors[0]) == 384 and len(use_vectors[0]) == 512
    assert cache.get_many(USE, 512, "passage", TEXTS) == use_vectors
    assert cache.get_many(E5, 384, "passage", TEXTS) == e5_vectors
    assert cache.get_many("ollama:other", 384, "passage", TEXTS) == [None, None]


def _overwrite(path: Path, text: str, **columns: object) -> None:
    key = cache_key(E5, "passage", text)
    with sqlite3.connect(path) as db:
        for column, value in columns.items():
            db.execute(f"UPDATE embedding SET {column} = ? WHERE key = ?", (value, key))
        assert db.total_changes == len(columns)


@pytest.mark.parametrize(
    "damage",
    [
        {"model": USE},  # a foreign model's row under this key
        {"dims": 512},
        {"kind": "query"},
        {"vector": b"\x00" * 10},  # truncated blob
        {"vector": struct.pack("<384f", *([float("nan")] * 384))},
        {"vector": struct.pack("<384f", *([1.0] * 384))},  # right size, not a vector we wrote (norm 19.6)
        {"vector": "not bytes"},
    ],
    ids=["foreign-model", "wrong-dims", "wrong-kind", "truncated", "nan", "not-unit", "text"],
)
def test_damaged_or_foreign_rows_are_refused_and_replaced(tmp_path: Path, damage: dict[str, object]) -> None:
    path = tmp_path / "c.sqlite3"
    good = load_embedder(E5, cache=path).embed_passages(TEXTS)
    _overwrite(path, TEXTS[0], **damage)
    again = load_embedder(E5, cache=path)
    assert again.embed_passages(TEXTS) == good
    assert again.cache is not None and again.cache.refused == 1 and again.backend_calls == 1
    # The refused row was replaced by the recomputed vector: a third reader hits it.
    third = load_embedder(E5, cache=path)
    assert third.embed_passages(TEXTS) == good and third.backend_calls == 0


def test_query_lru_serves_repeats_and_cannot_be_poisoned() -> None:
    embedder = load_embedder(E5, cache=False, query_cache_size=2)
    (q,) = embedder.embed_queries(["déclarer un sinistre"])
    q[0] = 42.0  # a caller mutating its vector
    (again,) = embedder.embed_queries(["déclarer un sinistre"])
    assert embedder.backend_calls == 1 and again[0] != 42.0
    embedder.embed_queries(["a", "b"])  # evicts the first query (capacity 2)
    embedder.embed_queries(["déclarer un sinistre"])
    assert embedder.backend_calls == 3


def test_cache_dir_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAGFR_CACHE_DIR", str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    embedder = load_embedder(USE)
    embedder.embed_passages(["bonjour"])
    assert (tmp_path / "here" / "embeddings.sqlite3").is_file()
