"""The cross-encoder's default model (the French one, by its Hugging Face name, from the offline cache a load
reads) and its default max length (the model's own, as Open WebUI loads it). STAND-IN weights
(tests/support/standins.py): plumbing only, never quality."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.standins import tiny_cross_encoder, tiny_cross_encoder_cache

from ragfr.errors import ConfigError
from ragfr.retrieval import rerank
from ragfr.retrieval.rerank import FRENCH_MODEL, CrossEncoderReranker, hub_cache_dir, resolve_model


def test_the_french_model_is_the_name_the_chart_and_the_image_use() -> None:
    from ragfr_tools.reranker.package import REPO

    assert FRENCH_MODEL == REPO == "ragfr/reranker-fr"


@pytest.fixture
def st_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SENTENCE_TRANSFORMERS_HOME (read at each call, unlike the hub's variables) at an empty tmp dir."""
    home = tmp_path / "st-home"
    home.mkdir()
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub read the variable when this session first imported it: without this, a load by name
    # asks the (unreachable) Hub first and waits minutes for its retries before reading the cache.
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    monkeypatch.delenv("RAGFR_RERANKER", raising=False)
    return home


def test_default_is_the_french_model_when_the_cache_holds_it(st_home: Path) -> None:
    assert hub_cache_dir() == st_home
    with pytest.raises(ConfigError) as refused:
        resolve_model()
    assert f"'ragfr/reranker-fr' is not in the Hugging Face cache {st_home} " in str(refused.value)
    assert f"python -m ragfr_tools.reranker.package --out {st_home}" in str(refused.value)
    tiny_cross_encoder_cache(st_home, FRENCH_MODEL)
    assert resolve_model() == FRENCH_MODEL
    rerank.require_reranker_files(FRENCH_MODEL)  # looks in the same cache
    assert resolve_model("acme/other") == "acme/other"


def test_an_empty_sentence_transformers_home_is_unset(st_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", " ")
    assert hub_cache_dir() == Path(constants.HF_HUB_CACHE)


def test_the_french_model_loads_by_name_from_sentence_transformers_home(st_home: Path) -> None:
    tiny_cross_encoder_cache(st_home, FRENCH_MODEL, words=("franchise", "vol"))
    reranker = CrossEncoderReranker(resolve_model())
    assert reranker.model_id == FRENCH_MODEL
    assert len(reranker.score("franchise", ["franchise vol", "vol"])) == 2


def test_max_length_defaults_to_the_models_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Open WebUI loads the cross-encoder with `CrossEncoder(path)`: the saved maximum (128 for the French
    model), not 512. Given explicitly (the reranker tools), max_length still wins."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = str(tiny_cross_encoder(tmp_path / "ce", max_length=48))
    assert CrossEncoderReranker(model)._model.max_seq_length == 48
    assert CrossEncoderReranker(model, max_length=32)._model.max_seq_length == 32
    assert rerank.load_reranker(model)._model.max_seq_length == 48
