"""A calibration fitted on another feature list that reaches a running process anyway (issue 47 item 6): logged
once with the refit command, counted by ragfr_gate_calibration_refused, set aside: the shipped coefficients of
its model decide (the model-free gate where none ship) and every decision's reason says so, in the chat's gate log
too. Never the ConfigError that made the chat refuse every question; a value that is no calibration at all
stays an error (tests/gate/test_fitting.py)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from tests.support.gate import hide_model_free_gate

from ragfr import metrics
from ragfr.gate import fitted
from ragfr.gate.features import FEATURES
from ragfr.gate.rank import GateConfig, Outcome, decide
from ragfr.owui.runtime import provenance
from ragfr.owui.runtime.chat_gate import METADATA_KEY, gate

E5 = "local:multilingual-e5-small"
SHIPPED = Path(fitted.__file__).parent / "models" / "local_multilingual-e5-small.json"
REFUSED = "RAGFR_GATE_CALIBRATION refused, fitted on another feature list"


@pytest.fixture(autouse=True)
def fresh_process() -> Iterator[None]:
    """Each test is a process that has not met the variable yet (the module caches what it read and logged)."""
    def clear() -> None:
        for cached in (fitted._configured, fitted._shipped, fitted._say_refused, fitted._say_model_free):
            cached.cache_clear()
        metrics.GATE_CALIBRATION_REFUSED.set(0)

    clear()
    yield
    clear()


def old_calibration(model: str, **changes: Any) -> str:
    """The operator's calibration of an earlier version: one feature fewer, its coefficients trimmed to match,
    and thresholds that would refuse everything if it were read."""
    doc = json.loads(SHIPPED.read_text(encoding="utf-8"))
    keep = len(FEATURES) - 1
    doc.update(embedding_model=model, features=list(FEATURES[:keep]),
               model={k: (v[:keep] if isinstance(v, list) else v) for k, v in doc["model"].items()},
               thresholds={"answer_at": 1.0, "caution_at": 1.0}, **changes)
    return json.dumps(doc)


def strong_evidence() -> dict[str, float]:
    """Features three standard deviations above the shipped fit's mean in cos1: the shipped gate answers."""
    doc = json.loads(SHIPPED.read_text(encoding="utf-8"))
    mean, scale = doc["model"]["mean"], doc["model"]["scale"]
    out = dict(zip(FEATURES, mean, strict=True))
    out["cos1"] = mean[0] + 3 * scale[0]
    return out


def refused_gauge() -> float | None:
    return REGISTRY.get_sample_value("ragfr_gate_calibration_refused")


def test_the_shipped_coefficients_decide_and_the_log_and_the_metric_say_why(monkeypatch, caplog) -> None:
    monkeypatch.setenv(fitted.ENV, old_calibration(E5))
    assert refused_gauge() == 0
    with caplog.at_level(logging.ERROR, logger="ragfr.gate"):
        for _ in range(3):
            gate_ = fitted.load(E5)
            assert gate_ is not None and gate_.source == "models/local_multilingual-e5-small.json"
    said = [r.getMessage() for r in caplog.records if r.name == "ragfr.gate"]
    assert len(said) == 1, said  # once per process, not per question
    assert "fitted on another feature list" in said[0] and "missing n_terms" in said[0]
    assert "`ragfr gate calibrate`" in said[0] and "shipped coefficients" in said[0]
    assert refused_gauge() == 1

    d = decide([("a", 0.02)], GateConfig.for_scale("rrf"), evidence=strong_evidence(), embedding_model=E5)
    assert d.outcome is Outcome.ANSWER and d.rule == "evidence" and d.probability is not None
    assert REFUSED in d.reason and "the shipped coefficients decide" in d.reason
    assert "ragfr gate calibrate" in fitted.describe(E5) and "models/local_multilingual-e5-small.json" in \
        fitted.describe(E5)


def test_a_model_with_no_shipped_coefficients_falls_back_to_the_model_free_gate_and_says_why(monkeypatch) -> None:
    monkeypatch.setenv(fitted.ENV, old_calibration("ollama:bge-m3:567m"))
    gate_ = fitted.load("ollama:bge-m3:567m")
    assert gate_ is not None and gate_.source == "models/any-model.json"
    assert refused_gauge() == 1
    d = decide([("a", 0.04)], GateConfig.for_scale("rrf"), evidence=dict.fromkeys(FEATURES, 0.0),
               embedding_model="ollama:bge-m3:567m")
    assert d.rule == "evidence" and d.probability is not None
    assert REFUSED in d.reason and "the model-free gate decides" in d.reason
    assert REFUSED in fitted.describe("ollama:bge-m3:567m")


def test_the_rank_rule_decides_only_when_the_package_lacks_the_model_free_gate(monkeypatch, caplog) -> None:
    """A broken install (models/any-model.json removed): the rank rule, and a warning that says so. The test
    hides the file (tests/support/gate.py); the product always ships it."""
    hide_model_free_gate(monkeypatch)
    with caplog.at_level(logging.INFO, logger="ragfr.gate"):
        assert fitted.load("ollama:bge-m3:567m") is None
    said = [r.getMessage() for r in caplog.records if r.name == "ragfr.gate"]
    assert len(said) == 1 and "lacks models/any-model.json" in said[0] and "rank rule" in said[0]
    d = decide([("a", 0.04)], GateConfig.for_scale("rrf"), evidence={"cos1": 0.9},
               embedding_model="ollama:bge-m3:567m")
    assert d.outcome is Outcome.ANSWER and d.rule == "rank"


def test_a_refused_calibration_of_another_model_says_nothing_about_this_one(monkeypatch) -> None:
    monkeypatch.setenv(fitted.ENV, old_calibration("ollama:bge-m3:567m"))
    assert fitted.load(E5) is not None and fitted.calibration_note(E5) is None
    d = decide([("a", 0.02)], GateConfig.for_scale("rrf"), evidence=strong_evidence(), embedding_model=E5)
    assert "refused" not in d.reason and refused_gauge() == 0


def test_the_chat_answers_with_the_shipped_gate_and_its_gate_log_says_why(monkeypatch, caplog) -> None:
    """Before, the chat's gate raised a ConfigError on every question and refused them all as failures."""
    monkeypatch.setenv(fitted.ENV, old_calibration(E5))
    evidence = json.dumps(strong_evidence())
    sources = [{"source": {"type": "collection", "id": "kb1", "name": "Contrats"},
                "document": ["La franchise est de 150 euros."],
                "metadata": [{"name": "contrat.txt", "ragfr_chunk_id": "c0", "ragfr_rrf_score": 0.02,
                              "ragfr_top_rrf_score": 0.02, "ragfr_embedding_model": E5,
                              "ragfr_evidence": evidence, "ragfr_provenance": provenance.issue()}]}]
    metadata: dict[str, Any] = {"files": [{"type": "collection", "id": "kb1"}]}
    with caplog.at_level(logging.INFO, logger="ragfr.gate"):
        out = gate(metadata, sources, question="Quelle est la franchise ?", searched=True, reranked=False)
    decision = metadata[METADATA_KEY]
    assert decision["decision"] == "answer" and decision["rule"] == "evidence" and decision["incident"] is None
    assert out[0]["document"] == ["La franchise est de 150 euros."]
    logged = [json.loads(r.getMessage()) for r in caplog.records if r.getMessage().startswith('{"event": "gate"')]
    assert len(logged) == 1 and REFUSED in logged[0]["reason"] and "ragfr gate calibrate" in logged[0]["reason"]
    assert refused_gauge() == 1


def test_a_value_that_is_not_json_stays_an_error(monkeypatch) -> None:
    from ragfr.errors import ConfigError

    monkeypatch.setenv(fitted.ENV, '{"embedding_model": ')
    with pytest.raises(ConfigError, match=fitted.ENV):
        fitted.load(E5)
