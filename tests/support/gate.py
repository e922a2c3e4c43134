"""A fitted evidence gate that reads one feature, for tests that must place p exactly (mean 0, scale 1,
intercept 0: p = sigmoid(weight * value))."""

from __future__ import annotations

from ragfr.gate.features import FEATURES
from ragfr.gate.fitted import FittedGate, from_json


def gate_on(feature: str, weight: float, answer_at: float = 0.8, caution_at: float = 0.3,
            model: str = "m") -> FittedGate:
    coef = [weight if f == feature else 0.0 for f in FEATURES]
    return from_json({"embedding_model": model, "features": list(FEATURES),
                      "model": {"mean": [0.0] * len(FEATURES), "scale": [1.0] * len(FEATURES), "coef": coef,
                                "intercept": 0.0},
                      "thresholds": {"answer_at": answer_at, "caution_at": caution_at}}, "test")


def hide_model_free_gate(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The package as if it lacked models/any-model.json: the only case where the rank rule still decides
    (a broken install). For tests of that fallback only; the product always ships the file."""
    from ragfr.gate import fitted

    real = fitted._shipped.__wrapped__
    monkeypatch.setattr(fitted, "_shipped", lambda model: None if model == fitted.ANY_MODEL else real(model))
