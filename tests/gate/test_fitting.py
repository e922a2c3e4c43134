"""The evidence gate's fitting math (ragfr.gate.fitting), which `ragfr gate calibrate` and the
repository's gate_fit share: the Newton solution is the regularized optimum, thresholds meet their targets on
the rows they are chosen on, and the split is fixed by ids alone."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ragfr.errors import ConfigError
from ragfr.gate import fitted, fitting
from ragfr.gate.features import FEATURES
from ragfr.gate.fitted import from_json


def _rows(n: int, seed: int) -> tuple[list[dict[str, float]], list[bool]]:
    rng = random.Random(seed)
    feats, labels = [], []
    for _ in range(n):
        y = rng.random() < 0.3  # unbalanced, as real calibration sets are
        feats.append({name: rng.gauss(0.8 if y and i < 3 else 0.0, 1.0) for i, name in enumerate(FEATURES)})
        labels.append(y)
    return feats, labels


def test_the_fit_is_the_optimum_of_the_balanced_l2_objective() -> None:
    feats, labels = _rows(400, 1)
    model = fitting.fit(feats, labels, c=0.5)
    x = (fitting.matrix(feats) - np.array(model["mean"])) / np.array(model["scale"])
    y = np.array(labels, dtype=float)
    w = np.where(y == 1, len(y) / (2 * y.sum()), len(y) / (2 * (len(y) - y.sum())))
    p = 1 / (1 + np.exp(-(x @ np.array(model["coef"]) + model["intercept"])))
    grad_coef = np.array(model["coef"]) + 0.5 * x.T @ (w * (p - y))
    grad_intercept = 0.5 * np.sum(w * (p - y))
    assert np.max(np.abs(grad_coef)) < 1e-6 and abs(grad_intercept) < 1e-6
    # The informative features (the first three) carry the weight.
    assert min(model["coef"][:3]) > 2 * max(abs(c) for c in model["coef"][3:])
    assert model["rows"] == {"positive": int(y.sum()), "negative": int(len(y) - y.sum())}


def test_thresholds_meet_their_targets_on_the_dev_rows() -> None:
    feats, labels = _rows(600, 2)
    model = fitting.fit(feats, labels)
    gate = from_json(fitting.calibration("m", model, {"answer_at": 1.0, "caution_at": 0.0}, {}), "t")
    p = [gate.probability(f) for f in feats]
    pos = [pi for pi, y in zip(p, labels, strict=True) if y]
    neg = [pi for pi, y in zip(p, labels, strict=True) if not y]
    cuts = fitting.thresholds(pos, neg)
    assert sum(pi >= cuts["caution_at"] for pi in pos) / len(pos) >= 0.975
    assert sum(pi >= cuts["answer_at"] for pi in neg) <= 0.02 * len(neg) + 1  # "lower" quantile: one row more
    assert 0.0 <= cuts["caution_at"] <= cuts["answer_at"] <= 1.0
    assert fitting.auc(pos, neg) > 0.8 and fitting.auc([1.0], [1.0]) == 0.5


def test_the_split_depends_on_the_id_only() -> None:
    sides = [fitting.side_of(f"a:{i}", 0.25, 0.3) for i in range(4000)]
    assert sides == [fitting.side_of(f"a:{i}", 0.25, 0.3) for i in range(4000)]
    share = {s: sides.count(s) / len(sides) for s in ("fit", "dev", "test")}
    assert abs(share["test"] - 0.3) < 0.03 and abs(share["dev"] - 0.25) < 0.03


def test_a_calibration_variable_that_cannot_be_read_is_an_error_naming_it(monkeypatch, tmp_path) -> None:
    for value in (str(tmp_path / "missing.json"), '{"embedding_model": "m"}'):
        monkeypatch.setenv(fitted.ENV, value)
        with pytest.raises(ConfigError, match=fitted.ENV):
            fitted.load("m")
