"""The fitted evidence decision (issue 38 items 2-3): a logistic model over the search's evidence features
(ragfr.gate.features), fitted offline for ONE embedding model (cosines are that model's scale), gives
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
  package data            one file per embedding model the project calibrated (models/<model>.json, written
                          by `python -m ragfr_tools.eval.gate_fit`, which records how and on what they were fitted).
  the model-free gate     models/any-model.json, for every other model (the chart's bge-m3 among them): the
                          same logistic model with the cosine features at weight 0, since a cosine is read on
                          its model's own scale; fitted with e5-small and measured with a model and corpora it
                          never saw (`python -m ragfr_tools.eval.gate_anymodel`, docs/retrieval-quality.md,
                          "The gate on corpora it never saw"). Logged once per model that it decides.
`load` returns None only if the package lacks that file: then the caller keeps the rank rule (ragfr.gate.rank,
rule "rank" in its log and in ragfr_gate_rules_total). Plain floats, no numpy: the chat's gate runs this per
message.

A calibration fitted on another feature list (an upgrade added or renamed a feature) cannot be read as
coefficients of this version. The chart refuses it at render time (charts/ragfr/files/gate-features.json);
one that reaches a running process anyway is logged once, counted (ragfr_gate_calibration_refused) and set
aside: the shipped coefficients of its model decide, or the model-free gate where none ship, and every
decision's reason says so (`calibration_note`). Never a ConfigError there: the chat would refuse every question. A
value that is not a calibration at all (unreadable JSON, a missing key) stays an error.
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

from ragfr import metrics
from ragfr.errors import ConfigError
from ragfr.gate.features import FEATURES

Verdict = Literal["answer", "caution", "refuse"]
RULE = "evidence"  # the rule name the gate log reports (the other one: "rank")
ENV = "RAGFR_GATE_CALIBRATION"
REFIT = "ragfr gate calibrate"  # the command that refits (docs/runbooks/gate-calibration.md)
ANY_MODEL = "any-model"  # models/any-model.json: the model-free gate, for a model with no gate of its own

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


class OtherFeatures(ValueError):
    """A calibration fitted on another feature list than FEATURES: its coefficients mean nothing here."""

    def __init__(self, source: str, embedding_model: str, names: tuple[str, ...]) -> None:
        self.embedding_model = embedding_model
        missing, extra = sorted(set(FEATURES) - set(names)), sorted(set(names) - set(FEATURES))
        what = (f"missing {', '.join(missing) or '-'}; not computed any more {', '.join(extra) or '-'}"
                if missing or extra else "the same names in another order")
        super().__init__(f"{source}: fitted on another feature list than this version computes ({what}): "
                         f"refit with `{REFIT}`")


@dataclass(frozen=True)
class Refused:
    """An operator's calibration set aside (OtherFeatures): for its model, the shipped gate or the rank rule."""

    embedding_model: str
    reason: str


def from_json(data: Mapping[str, Any], source: str) -> FittedGate:
    names = tuple(data["features"])
    if names != FEATURES:
        raise OtherFeatures(source, str(data.get("embedding_model", "")), names)
    model = data["model"]
    return FittedGate(str(data["embedding_model"]), names, tuple(map(float, model["mean"])),
                      tuple(map(float, model["scale"])), tuple(map(float, model["coef"])), float(model["intercept"]),
                      float(data["thresholds"]["answer_at"]), float(data["thresholds"]["caution_at"]), source)


def load(embedding_model: str) -> FittedGate | None:
    """The fitted gate of `embedding_model`: $RAGFR_GATE_CALIBRATION when it names that model and this
    version can read it, else the package's file for that model, else the model-free gate (logged once per
    model); None only if the package lacks the model-free gate's file (the rank rule applies)."""
    configured = _configured(os.environ.get(ENV, "").strip())
    if isinstance(configured, FittedGate) and configured.embedding_model == embedding_model:
        return configured
    own = _shipped(embedding_model)
    shipped = own or _shipped(ANY_MODEL)
    if isinstance(configured, Refused) and configured.embedding_model == embedding_model:
        _say_refused(configured, shipped.source if shipped else None)
    elif own is None:
        _say_model_free(embedding_model, shipped is not None,
                        configured.embedding_model if configured else None)
    return shipped


def calibration_note(embedding_model: str | None) -> str | None:
    """Why the operator's calibration of `embedding_model` does not decide, for the decision's reason (the gate
    log, `ragfr ask --json`, `ragfr gate check`); None when it does or none was set for that model."""
    if not embedding_model:
        return None
    configured = _configured(os.environ.get(ENV, "").strip())
    if not isinstance(configured, Refused) or configured.embedding_model != embedding_model:
        return None
    decides = ("the shipped coefficients decide" if _shipped(embedding_model) else
               "the model-free gate decides" if _shipped(ANY_MODEL) else "the rank rule decides")
    return f"{ENV} refused, fitted on another feature list: {decides}; refit with `{REFIT}`"


def describe(embedding_model: str) -> str:
    """One line for an operator: which gate decides for `embedding_model` (`ragfr gate check`'s first line)."""
    gate = load(embedding_model)
    note = calibration_note(embedding_model)
    if gate is None:
        why = note or f"{ENV} unset or for another model, none shipped"
        return (f"embedding model {embedding_model}: no fitted evidence gate ({why}): the rank rule decides "
                f"(answer or refuse); `{REFIT}` fits one")
    if gate.embedding_model != embedding_model:
        return (f"embedding model {embedding_model}: no gate fitted for it; the model-free evidence gate from "
                f"{gate.source} decides (no cosine feature; answer at p >= {gate.answer_at:.3f}, caution at "
                f"p >= {gate.caution_at:.3f}); `{REFIT}` fits one for this model" + (f" ({note})" if note else ""))
    return (f"embedding model {embedding_model}: fitted evidence gate from {gate.source} "
            f"(answer at p >= {gate.answer_at:.3f}, caution at p >= {gate.caution_at:.3f})"
            + (f" ({note})" if note else ""))


@lru_cache(maxsize=4)
def _configured(text: str) -> FittedGate | Refused | None:
    """The operator's calibration from the variable's value (the JSON itself, or a file path). A value that
    cannot be read raises: a calibration the operator set and the gate silently ignored would be worse. One
    fitted on another feature list is Refused (module docstring): logged and counted when `load` meets it."""
    if not text:
        return None
    try:
        if text.startswith("{"):
            return from_json(json.loads(text), ENV)
        with open(text, encoding="utf-8") as f:
            return from_json(json.load(f), f"{ENV}={text}")
    except OtherFeatures as exc:
        return Refused(exc.embedding_model, str(exc))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{ENV} is not a calibration `ragfr gate calibrate` wrote (the JSON, or a path to it): "
                          f"{type(exc).__name__}: {exc}") from None


@lru_cache(maxsize=8)
def _shipped(embedding_model: str) -> FittedGate | None:
    path = resources.files("ragfr.gate").joinpath("models", f"{slug(embedding_model)}.json")
    if not path.is_file():
        return None
    return from_json(json.loads(path.read_text(encoding="utf-8")), f"models/{slug(embedding_model)}.json")


@lru_cache(maxsize=8)
def _say_refused(refused: Refused, shipped: str | None) -> None:
    metrics.gate_calibration_refused()
    log.error("ragfr: %s; %s (chart: openwebui.gate.calibration, docs/runbooks/chart-upgrade.md)", refused.reason,
              f"the shipped coefficients {shipped} decide meanwhile" if shipped else
              "no coefficients ship for this model: the rank rule decides meanwhile (answer or refuse)")


@lru_cache(maxsize=8)
def _say_model_free(embedding_model: str, model_free: bool, configured_for: str | None) -> None:
    other = f"; {ENV} is for {configured_for}, not this model" if configured_for else ""
    if model_free:
        log.info("ragfr: no evidence gate fitted for embedding model %s (none shipped%s): the model-free gate "
                 "models/%s.json decides; `ragfr gate calibrate` fits one for this model and your questions "
                 "(chart: openwebui.gate.calibration)", embedding_model, other, ANY_MODEL)
        return
    log.warning("ragfr: no fitted evidence gate for embedding model %s (none shipped%s, and the package lacks "
                "models/%s.json): the rank rule decides (answer or refuse, never caution); run `ragfr gate "
                "calibrate` and set %s (chart: openwebui.gate.calibration)", embedding_model, other, ANY_MODEL, ENV)
