"""The quality regression check's rule on hand-made results: recall@10 and nDCG@10 are judged separately."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragfr.errors import ConfigError
from ragfr.eval.regression import check, update

BASE = {
    "tolerance": {"recall@10": 0.01, "ndcg@10": 0.02},
    "suites": {"golden": {"embedder": "local:e5", "queries": 75, "dataset": "golden",
                          "configurations": {"ragfr-hybrid": {"recall@10": 0.90, "ndcg@10": 0.80}}}},
}


def _results(recall: float, ndcg: float, **extra: object) -> dict:
    return {"embedder": "local:e5", "queries": 75, "dataset": "golden",
            "configurations": {"ragfr-hybrid": {"recall@10": recall, "ndcg@10": ndcg}}, **extra}


def _verdicts(results: dict) -> dict[str, bool]:
    return {c.metric: c.passed for c in check(results, BASE, "golden", Path("b.json"))}


def test_recall_drop_fails_even_when_ndcg_rose() -> None:
    assert _verdicts(_results(recall=0.88, ndcg=0.95)) == {"recall@10": False, "ndcg@10": True}


def test_ndcg_drop_fails_on_its_own() -> None:
    assert _verdicts(_results(recall=0.93, ndcg=0.77)) == {"recall@10": True, "ndcg@10": False}


def test_within_tolerance_passes() -> None:
    # 0.90 - 0.01 = 0.89 is still allowed; 0.80 - 0.02 = 0.78 too
    assert _verdicts(_results(recall=0.89, ndcg=0.78)) == {"recall@10": True, "ndcg@10": True}


def test_a_gated_configuration_that_did_not_run_fails() -> None:
    results = _results(0.9, 0.8)
    results["configurations"] = {}
    assert not any(c.passed for c in check(results, BASE, "golden", Path("b.json")))


def test_other_embedder_or_query_count_is_refused() -> None:
    with pytest.raises(ConfigError, match="embedder"):
        check({**_results(0.9, 0.8), "embedder": "local:use"}, BASE, "golden", Path("b.json"))
    with pytest.raises(ConfigError, match="queries"):
        check({**_results(0.9, 0.8), "queries": 74}, BASE, "golden", Path("b.json"))


def test_update_records_only_configurations_that_ran() -> None:
    out = update({"suites": {}}, "piaf-ci", _results(0.7, 0.6), ["ragfr-hybrid", "ragfr-vector"])
    assert out["suites"]["piaf-ci"]["configurations"] == {"ragfr-hybrid": {"recall@10": 0.7, "ndcg@10": 0.6}}


def test_suite_tolerance_overrides_the_global_one() -> None:
    suite = {**BASE["suites"]["golden"], "tolerance": {"recall@10": 0.05}}
    baselines = {**BASE, "suites": {"golden": suite}}
    verdicts = {c.metric: c.passed for c in check(_results(0.86, 0.80), baselines, "golden", Path("b.json"))}
    assert verdicts == {"recall@10": True, "ndcg@10": True}  # 0.90 - 0.05 <= 0.86


def test_update_keeps_the_suite_tolerance() -> None:
    baselines = {"suites": {"golden": {"tolerance": {"recall@10": 0.02}, "configurations": {}}}}
    out = update(baselines, "golden", _results(0.7, 0.6), ["ragfr-hybrid"])
    assert out["suites"]["golden"]["tolerance"] == {"recall@10": 0.02}
