"""The fitted evidence decision (issue 38 items 2-3): three outcomes from the features, the shipped
coefficients per embedding model, and the rank rule's fallback for a model without them."""

from __future__ import annotations

import json

import pytest
from tests.support.gate import gate_on

from ragfr.gate import fitted
from ragfr.gate.features import FEATURES
from ragfr.gate.fitted import from_json, load, slug


def test_three_outcomes_at_the_thresholds() -> None:
    gate = gate_on("cos1", 1.0)
    # sigmoid(x) = 0.8 at x = ln 4, 0.3 at x = ln(3/7)
    assert gate.decide({"cos1": 2.0})[0] == "answer"
    assert gate.decide({"cos1": 1.0})[0] == "caution"  # p 0.731
    assert gate.decide({"cos1": -1.0})[0] == "refuse"  # p 0.269
    verdict, p, reason = gate.decide({"cos1": 0.0})
    assert verdict == "caution" and p == pytest.approx(0.5) and "between the caution threshold" in reason
    assert gate.decide({})[0] == "caution"  # a missing feature reads as 0, never as an error


def test_a_file_fitted_on_other_features_is_refused() -> None:
    with pytest.raises(ValueError, match="refit"):
        from_json({"embedding_model": "m", "features": ["cos1"], "model": {}, "thresholds": {}}, "old.json")


def test_a_model_without_coefficients_of_its_own_gets_the_model_free_gate() -> None:
    """The chart's bge-m3 and every model nobody fitted: models/any-model.json, whose cosine features weigh
    nothing (a cosine is read on its own model's scale), says so in `describe`."""
    gate = load("local:a-model-nobody-fitted")
    assert gate is not None and gate.source == "models/any-model.json" and gate.features == FEATURES
    assert all(c == 0.0 for name, c in zip(gate.features, gate.coef, strict=True) if name.startswith("cos"))
    assert all(c != 0.0 for name, c in zip(gate.features, gate.coef, strict=True) if not name.startswith("cos"))
    assert 0 < gate.caution_at <= gate.answer_at < 1
    said = fitted.describe("ollama:bge-m3:567m")
    assert "model-free evidence gate from models/any-model.json" in said and "ragfr gate calibrate" in said
    # the cosines move nothing: the same features with any cosine give the same probability
    features = dict.fromkeys(FEATURES, 0.3)
    assert gate.probability(features) == gate.probability(features | {"cos1": 0.99, "cos3": 0.1})
    assert slug("local:multilingual-e5-small") == "local_multilingual-e5-small"


def test_the_shipped_e5_coefficients_load_and_say_what_they_were_fitted_on() -> None:
    gate = load("local:multilingual-e5-small")
    assert gate is not None and gate.features == FEATURES and 0 < gate.caution_at <= gate.answer_at < 1
    path = fitted.resources.files("ragfr.gate") / "models" / "local_multilingual-e5-small.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["embedding_model"] == "local:multilingual-e5-small" and "gate_fit" in data["fitted"]["tool"]


def test_the_one_decision_takes_three_outcomes_with_a_fitted_gate(monkeypatch) -> None:
    """gate.decide (ragfr ask and the chat): the fitted gate of the search's model decides and says so; the
    noise floor and an empty search still refuse whatever the features say."""
    from ragfr.gate.rank import GateConfig, Outcome, decide

    gate = gate_on("cos1", 1.0)
    monkeypatch.setattr(fitted, "load", lambda model: gate if model == "m" else None)
    rrf = GateConfig.for_scale("rrf")
    scored = [("a", 0.02), ("b", 0.016)]  # below the rank rule's evidence threshold (0.03227)
    assert decide(scored, rrf).outcome is Outcome.REFUSE  # no evidence given: the rank rule
    for cos, want in ((2.0, Outcome.ANSWER), (1.0, Outcome.CAUTION), (-1.0, Outcome.REFUSE)):
        d = decide(scored, rrf, evidence={"cos1": cos}, embedding_model="m")
        assert d.outcome is want and d.rule == "evidence" and d.probability is not None
        assert d.summary()["rule"] == "evidence" and d.summary()["decision"] == want.value
        assert d.grounded is (want is not Outcome.REFUSE)
    other = decide(scored, rrf, evidence={"cos1": 2.0}, embedding_model="x")
    assert other.rule == "rank" and other.outcome is Outcome.REFUSE and other.probability is None
    grounded = decide([("a", 0.04)], rrf, evidence={"cos1": 2.0}, embedding_model="x")
    assert grounded.outcome is Outcome.ANSWER and "no fitted evidence gate for x" in grounded.reason
    assert decide([], rrf, evidence={"cos1": 2.0}, embedding_model="m").outcome is Outcome.REFUSE
    below_floor = decide([("a", 0.001)], rrf, evidence={"cos1": 2.0}, embedding_model="m")
    assert below_floor.outcome is Outcome.REFUSE and below_floor.rule == "rank"
    # a calibrated cross-encoder scale keeps its threshold: the fitted gate never read its scores
    ce = GateConfig("cross-encoder", -4.0, 0.0)
    assert decide([("a", 1.0)], ce, evidence={"cos1": -5.0}, embedding_model="m").rule == "rank"


def test_a_search_with_no_features_is_decided_by_the_rank_rule_not_read_as_zero_evidence() -> None:
    """An empty feature mapping (a search that computed none) is not a search whose features are all zero: the
    model-free gate would read it as no evidence at all and refuse a passage first in both arms."""
    from ragfr.gate.rank import GateConfig, Outcome, decide

    rrf = GateConfig.for_scale("rrf")
    d = decide([("a", 2 / 61)], rrf, evidence={}, embedding_model="ollama:bge-m3:567m")
    assert d.outcome is Outcome.ANSWER and d.rule == "rank" and "carries no evidence features" in d.reason
