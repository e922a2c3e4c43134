"""Fitting the evidence gate (ragfr.gate.fitted) on labelled searches: the math `ragfr gate
calibrate` runs for an operator's embedding model and the repository's `ragfr_tools.eval.gate_fit` runs for
the shipped coefficients, so both fit the same model the same way.

A row is one search: its evidence features (SearchResult.evidence) and a label, positive (the top passages hold
the answer) or negative (the collection does not hold it). The model: features standardized on the fit rows,
an L2-regularized logistic regression with both classes weighted equally (sklearn's LogisticRegression(C,
class_weight="balanced") objective: 0.5*|w|^2 + C * sum(weight_i * logloss_i), intercept not penalized),
solved by Newton's method: 15 features and a few hundred rows converge in a handful of steps, with numpy
(already a product dependency) and no solver to ship.

Thresholds (chosen on a DEV split, never on the rows the rates are reported on): caution_at is the positives'
(1 - not_refused) quantile of p (that share of answerable questions is not refused), answer_at the larger of
the positives' (1 - answered) quantile and just above the negatives' (1 - negatives_answered) quantile. Quantiles
are numpy's "lower" (a value of the rows): on n dev negatives, up to one row more than the share may pass.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragfr.gate.features import FEATURES


@dataclass(frozen=True)
class Targets:
    """The shares the thresholds aim at on the dev split (issue 38's goals, with a margin: dev is small)."""

    not_refused: float = 0.975  # of the answerable questions, at least this share is not refused
    answered: float = 0.92  # of them, this share answered without caution ...
    negatives_answered: float = 0.02  # ... unless more than this share of the unanswerable would be too


DEFAULT_TARGETS = Targets()


def side_of(key: str, dev_share: float, test_share: float) -> str:
    """fit, dev or test, fixed by a hash of `key` (no seed, no file order): the same row lands on the same side
    on every run and machine."""
    u = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16) / float(1 << 48)
    return "test" if u < test_share else "dev" if u < test_share + dev_share else "fit"


def matrix(features: Sequence[Mapping[str, float]], names: Sequence[str] = FEATURES) -> np.ndarray:
    return np.array([[float(f.get(name, 0.0)) for name in names] for f in features], dtype=float).reshape(
        len(features), len(names))


def fit(features: Sequence[Mapping[str, float]], labels: Sequence[bool], c: float = 1.0,
        max_steps: int = 100, names: Sequence[str] = FEATURES) -> dict[str, Any]:
    """The `model` section of a calibration (mean, scale, coef, intercept, C, class_weight, rows). `names`:
    the features, in the coefficients' order (an experiment may add one; the product reads FEATURES)."""
    x, y = matrix(features, names), np.array(labels, dtype=float)
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == len(y):
        raise ValueError(f"fitting needs positive and negative rows ({n_pos} positive of {len(y)})")
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(y), 1))])
    weight = np.where(y == 1, len(y) / (2.0 * n_pos), len(y) / (2.0 * (len(y) - n_pos)))
    penalty = np.ones(z.shape[1])
    penalty[-1] = 0.0  # the intercept is not penalized
    w = np.zeros(z.shape[1])
    for _ in range(max_steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -60.0, 60.0)))
        grad = penalty * w + c * z.T @ (weight * (p - y))
        hess = np.diag(penalty) + c * (z.T * (weight * p * (1.0 - p))) @ z
        step = np.linalg.solve(hess + 1e-10 * np.eye(len(w)), grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return {"mean": mean.tolist(), "scale": scale.tolist(), "coef": w[:-1].tolist(), "intercept": float(w[-1]),
            "C": c, "class_weight": "balanced", "rows": {"positive": n_pos, "negative": int(len(y) - n_pos)}}


def quantile(values: Sequence[float], q: float) -> float:
    return float(np.quantile(np.array(values, dtype=float), q, method="lower")) if len(values) else 0.5


def thresholds(positives: Sequence[float], negatives: Sequence[float],
               targets: Targets = DEFAULT_TARGETS) -> dict[str, float]:
    """{answer_at, caution_at} from the dev split's probabilities (module docstring)."""
    caution_at = quantile(positives, 1.0 - targets.not_refused)
    answer_at = quantile(positives, 1.0 - targets.answered)
    if negatives:
        answer_at = max(answer_at, float(np.nextafter(quantile(negatives, 1.0 - targets.negatives_answered), 1.0)))
    return {"answer_at": float(min(1.0, max(answer_at, caution_at))), "caution_at": caution_at}


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """Probability that a positive scores above a negative (ties count half); None without both."""
    if not len(positives) or not len(negatives):
        return None
    p, n = np.array(positives, dtype=float), np.array(negatives, dtype=float)
    return float(((p[:, None] > n[None, :]).sum() + 0.5 * (p[:, None] == n[None, :]).sum()) / (len(p) * len(n)))


def shares(outcomes: Sequence[str]) -> dict[str, Any]:
    """{n, answer, caution, refuse}: the count and the share of each outcome."""
    n = len(outcomes)
    return {"n": n, **{k: round(sum(o == k for o in outcomes) / n, 4) if n else 0.0
                       for k in ("answer", "caution", "refuse")}}


def calibration(embedding_model: str, model: Mapping[str, Any], thresholds_: Mapping[str, float],
                fitted: Mapping[str, Any]) -> dict[str, Any]:
    """The document ragfr.gate.fitted.from_json reads (the shipped models/*.json format; the
    chart's openwebui.gate.calibration)."""
    return {"embedding_model": embedding_model, "features": list(FEATURES), "model": dict(model),
            "thresholds": dict(thresholds_), "fitted": dict(fitted)}
