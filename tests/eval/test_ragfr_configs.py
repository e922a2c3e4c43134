"""The reranking configuration of `ragfr eval` finds its cross-encoder as `ragfr search --rerank` does:
--reranker, else $RAGFR_RERANKER, else the French model (ragfr/reranker-fr) from the Hugging Face cache; none
found, it is skipped with the reason."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.support.paths import GOLDEN
from tests.support.standins import tiny_cross_encoder, tiny_cross_encoder_cache

from ragfr.cli import main
from ragfr.eval import ragfr_configs
from ragfr.eval.configs import EvalContext
from ragfr.retrieval.rerank import FRENCH_MODEL

E5 = "local:multilingual-e5-small"
RERANK = "ragfr-hybrid-rerank"


@pytest.fixture
def no_default_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RAGFR_RERANKER unset and the cross-encoder cache an empty folder (SENTENCE_TRANSFORMERS_HOME, the cache a
    load by name reads when set), whatever this machine's Hugging Face cache holds."""
    cache = tmp_path / "st-home"
    cache.mkdir()
    monkeypatch.delenv("RAGFR_RERANKER", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub read the variable when this session first imported it: without this, a load by name
    # asks the (unreachable) Hub first and waits minutes for its retries before reading the cache.
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(cache))
    return cache


def _make(ctx: EvalContext) -> object:
    (spec,) = [s for s in ragfr_configs.SPECS if s.name == RERANK]
    return spec.factory(ctx)


def _context(reranker: str | None) -> EvalContext:
    # The factory reads only the model and the depth before it has a model: no database, no embedder.
    return EvalContext(conn=None, dsn="", collection="", embedder=None, reranker=reranker)  # type: ignore[arg-type]


def test_without_a_model_the_rerank_configuration_is_skipped_with_where_it_looked(no_default_model: Path) -> None:
    reason = _make(_context(None))
    assert isinstance(reason, str)
    assert reason.startswith(f"no reranker model: no cross-encoder found: RAGFR_RERANKER is unset and the French "
                             f"cross-encoder 'ragfr/reranker-fr' is not in the Hugging Face cache {no_default_model} ")
    assert "`make reranker` trains it" in reason


def test_without_a_name_the_rerank_configuration_uses_the_cached_french_model(no_default_model: Path) -> None:
    """STAND-IN weights (tests/support/standins.py): which model the configuration loads, never its scores."""
    tiny_cross_encoder_cache(no_default_model, FRENCH_MODEL)
    ranker = _make(_context(None))
    assert isinstance(ranker, ragfr_configs.RagfrRanker), ranker
    assert ranker.reranker is not None and ranker.reranker.model_id == FRENCH_MODEL


def test_the_given_model_comes_before_ragfr_reranker(no_default_model: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGFR_RERANKER", str(tmp_path / "from-env"))
    for given, named in ((None, tmp_path / "from-env"), (str(tmp_path / "given"), tmp_path / "given")):
        reason = _make(_context(given))
        assert isinstance(reason, str) and f"reranker {str(named)!r} could not be loaded" in reason


def test_reranker_option_needs_the_rerank_configuration_and_a_name(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["eval", "--dsn", "postgresql://nobody@127.0.0.1:1/x", "--dataset", str(GOLDEN)]
    assert main([*base, "--configs", "ragfr-hybrid", "--reranker", "acme/ce"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"ragfr: error: --reranker is the model of {RERANK}, which this run does not include")
    assert main([*base, "--config", RERANK, "--reranker", ""]) == 2
    assert "empty --reranker" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_reranker_is_the_model_of_the_rerank_configuration(
        migrated_db: Callable[..., str], tmp_path: Path, no_default_model: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """STAND-IN weights (tests/support/standins.py): the run proves which model reranked, never its scores."""
    dsn = migrated_db(dims=384, model=E5)
    model = tiny_cross_encoder(tmp_path / "ce")
    argv = ["eval", "--dsn", dsn, "--dataset", str(GOLDEN), "--configs", f"ragfr-hybrid,{RERANK}", "--json",
            "--limit-queries", "5", "--depth", "20", "--out", str(tmp_path / "q.jsonl"), "--no-progress"]
    assert main([*argv, "--reranker", str(model)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document["configurations"]) == {"ragfr-hybrid", RERANK} and not document["skipped"]
    assert document["notes"] == {RERANK: {"reranker": str(model)}}
    # Without --reranker and with no default model: skipped with the reason, the other configuration still runs.
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document["configurations"]) == {"ragfr-hybrid"}
    assert document["skipped"][RERANK].startswith("no reranker model: no cross-encoder found")
