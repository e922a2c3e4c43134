"""The reranking configuration of `ragfr eval` finds its cross-encoder as `ragfr search --rerank` does:
--reranker, else $RAGFR_RERANKER, else the French model directory; none found, it is skipped with the reason."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.support.paths import GOLDEN
from tests.support.standins import tiny_cross_encoder

from ragfr.cli import main
from ragfr.eval import ragfr_configs
from ragfr.eval.configs import EvalContext

E5 = "local:multilingual-e5-small"
RERANK = "ragfr-hybrid-rerank"


@pytest.fixture
def no_default_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RAGFR_RERANKER unset and the French model directory absent, whatever this machine holds in /opt."""
    absent = tmp_path / "opt-ragfr-reranker"
    monkeypatch.delenv("RAGFR_RERANKER", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("ragfr.retrieval.rerank.FRENCH_MODEL_DIR", absent)
    return absent


def _make(ctx: EvalContext) -> object:
    (spec,) = [s for s in ragfr_configs.SPECS if s.name == RERANK]
    return spec.factory(ctx)


def _context(reranker: str | None) -> EvalContext:
    # The factory reads only the model and the depth before it has a model: no database, no embedder.
    return EvalContext(conn=None, dsn="", collection="", embedder=None, reranker=reranker)  # type: ignore[arg-type]


def test_without_a_model_the_rerank_configuration_is_skipped_with_where_it_looked(no_default_model: Path) -> None:
    reason = _make(_context(None))
    assert isinstance(reason, str)
    assert reason.startswith(f"no reranker model: no cross-encoder found: RAGFR_RERANKER is unset and "
                             f"{no_default_model} (the French cross-encoder's directory")
    assert "`make reranker` builds one" in reason


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
