"""The fitted evidence decision (issue 38 items 2-3): a logistic model over the search's evidence features
(ragfr.retrieval.evidence), fitted offline for ONE embedding model (cosines are that model's scale), gives
the probability that the top passages hold the answer; two thresholds chosen on a held-out split cut it into
three outcomes:

    p >= answer_at                answer
    caution_at <= p < answer_at   answer with a caution (the model is told to say when the passages do not
                                  hold the answer; the analyst sees a caution line)
    p < caution_at                refuse, no model call

Where the coefficients come from, first found:
  RAGFR_GATE_CALIBRATION  an operator's calibration (`ragfr gate calibrate`, the chart's
                          openwebui.gate.calibration): the JSON document, or the path of a file holding it. It
                          applies to the embedding model it names only; for another model it is ignored, logged.
  package data            one file per embedding model the project calibrated (gate_models/<model>.json, written
                          by `python -m ragfr_tools.eval.gate_fit`, which records how and on what they were fitted).
An embedding model with neither has no fitted gate: `load` returns None, the caller keeps the rank rule
(ragfr.retrieval.gate, rule "rank" in its log and in ragfr_gate_rules_total), and this module logs once per
model that it does. Plain floats, no numpy: the chat's gate runs this per message.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from ragfr.errors import ConfigError
from ragfr.retrieval.evidence import FEATURES

Verdict = Literal["answer", "caution", "refuse"]
RULE = "evidence"  # the rule name the gate log reports (the other one: "rank")
ENV = "RAGFR_GATE_CALIBRATION"

log = logging.getLogger("ragfr.gate")


@dataclass(frozen=True)
class FittedGate:
    embedding_model: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    answer_at: float
    caution_at: float
    source: str  # the file it was read from, for the log

    def probability(self, features: Mapping[str, float]) -> float:
        z = self.intercept + sum(c * (float(features.get(name, 0.0)) - m) / s
                                 for name, m, s, c in zip(self.features, self.mean, self.scale, self.coef, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def decide(self, features: Mapping[str, float]) -> tuple[Verdict, float, str]:
        """(outcome, probability, reason) for one search's features."""
        p = self.probability(features)
        if p >= self.answer_at:
            return "answer", p, f"evidence p={p:.3f} >= answer threshold {self.answer_at:.3f}"
        if p >= self.caution_at:
            return "caution", p, (f"evidence p={p:.3f} is between the caution threshold {self.caution_at:.3f} "
                                  f"and the answer threshold {self.answer_at:.3f}")
        return "refuse", p, f"evidence p={p:.3f} is below the caution threshold {self.caution_at:.3f}"


def slug(model_id: str) -> str:
    """The file name of a model's coefficients: local:multilingual-e5-small -> local_multilingual-e5-small."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", model_id)


def from_json(data: Mapping[str, Any], source: str) -> FittedGate:
    names = tuple(data["features"])
    if names != FEATURES:
        raise ValueError(f"{source}: fitted on features {names}, this version computes {FEATURES}: refit")
    model = data["model"]
    return FittedGate(str(data["embedding_model"]), names, tuple(map(float, model["mean"])),
                      tuple(map(float, model["scale"])), tuple(map(float, model["coef"])), float(model["intercept"]),
                      float(data["thresholds"]["answer_at"]), float(data["thresholds"]["caution_at"]), source)


def load(embedding_model: str) -> FittedGate | None:
    """The fitted gate of `embedding_model` ($RAGFR_GATE_CALIBRATION when it names that model, else the
    package's file), or None (no calibration for it: the rank rule applies, logged once per model)."""
    configured = _configured(os.environ.get(ENV, "").strip())
    if configured is not None and configured.embedding_model == embedding_model:
        return configured
    shipped = _shipped(embedding_model)
    if shipped is None:
        _say_rank_rule(embedding_model, configured.embedding_model if configured else None)
    return shipped


def describe(embedding_model: str) -> str:
    """One line for an operator: which gate decides for `embedding_model` (`ragfr gate check`'s first line)."""
    fitted = load(embedding_model)
    if fitted is None:
        return (f"embedding model {embedding_model}: no fitted evidence gate ({ENV} unset or for another model, "
                f"none shipped): the rank rule decides (answer or refuse); `ragfr gate calibrate` fits one")
    return (f"embedding model {embedding_model}: fitted evidence gate from {fitted.source} "
            f"(answer at p >= {fitted.answer_at:.3f}, caution at p >= {fitted.caution_at:.3f})")


@lru_cache(maxsize=4)
def _configured(text: str) -> FittedGate | None:
    """The operator's calibration from the variable's value (the JSON itself, or a file path). A value that
    cannot be read raises: a calibration the operator set and the gate silently ignored would be worse."""
    if not text:
        return None
    try:
        if text.startswith("{"):
            return from_json(json.loads(text), ENV)
        with open(text, encoding="utf-8") as f:
            return from_json(json.load(f), f"{ENV}={text}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{ENV} is not a calibration `ragfr gate calibrate` wrote (the JSON, or a path to it): "
                          f"{type(exc).__name__}: {exc}") from None


@lru_cache(maxsize=8)
def _shipped(embedding_model: str) -> FittedGate | None:
    path = resources.files("ragfr.retrieval").joinpath("gate_models", f"{slug(embedding_model)}.json")
    if not path.is_file():
        return None
    return from_json(json.loads(path.read_text(encoding="utf-8")), f"gate_models/{slug(embedding_model)}.json")


@lru_cache(maxsize=8)
def _say_rank_rule(embedding_model: str, configured_for: str | None) -> None:
    other = f"; {ENV} is for {configured_for}, not this model" if configured_for else ""
    log.warning("ragfr: no fitted evidence gate for embedding model %s (none shipped%s): the rank rule decides "
                "(answer or refuse, never caution); run `ragfr gate calibrate` and set %s "
                "(chart: openwebui.gate.calibration)", embedding_model, other, ENV)
