"""The fitted evidence decision (issue 38 items 2-3): a logistic model over the search's evidence features
(ragfr.retrieval.evidence), fitted offline for ONE embedding model (cosines are that model's scale), gives
the probability that the top passages hold the answer; two thresholds chosen on a held-out split cut it into
three outcomes:

    p >= answer_at                answer
    caution_at <= p < answer_at   answer with a caution (the model is told to say when the passages do not
                                  hold the answer; the analyst sees a caution line)
    p < caution_at                refuse, no model call

The coefficients ship as package data, one file per embedding model (gate_models/<model>.json, written by
`python -m ragfr_tools.eval.gate_fit`, which records how and on what they were fitted). An embedding model
without a file has no fitted gate: `load` returns None and the caller keeps the rank rule (ragfr.retrieval.gate),
saying so in its log. Plain floats, no numpy: the chat's gate runs this per message.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from ragfr.retrieval.evidence import FEATURES

Verdict = Literal["answer", "caution", "refuse"]
RULE = "evidence"  # the rule name the gate log reports (the other one: "rank")


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


@lru_cache(maxsize=8)
def load(embedding_model: str) -> FittedGate | None:
    """The shipped fitted gate of `embedding_model`, or None (no calibration for it: the rank rule applies)."""
    path = resources.files("ragfr.retrieval").joinpath("gate_models", f"{slug(embedding_model)}.json")
    if not path.is_file():
        return None
    return from_json(json.loads(path.read_text(encoding="utf-8")), f"gate_models/{slug(embedding_model)}.json")
