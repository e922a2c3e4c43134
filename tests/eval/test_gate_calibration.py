"""The gate calibration arithmetic, on hand-made scores (the real run is documented in
docs/retrieval-quality.md; it needs the golden collection and takes minutes)."""

from __future__ import annotations

import json

from tests.conftest import REPO

from ragfr.eval.gate_calibration import Scored, best_threshold, operating_point, report
from ragfr.retrieval.gate import rrf_thresholds


def _s(i: int, answerable: bool, rrf: float) -> Scored:
    return Scored(f"q{i}", answerable, rrf, None)


def test_operating_point_counts_both_sides() -> None:
    scored = [_s(1, True, 0.032), _s(2, True, 0.030), _s(3, False, 0.016), _s(4, False, 0.031)]
    p = operating_point(scored, 0.031, "rrf")
    assert (p.answered, p.refused) == (0.5, 0.5)
    p = operating_point(scored, 0.0305, "rrf")
    assert (p.answered, p.refused) == (0.5, 0.5)
    p = operating_point(scored, 0.017, "rrf")
    assert (p.answered, p.refused) == (1.0, 0.5)


def test_best_threshold_maximises_youden() -> None:
    scored = [_s(1, True, 0.0323), _s(2, True, 0.0325), _s(3, False, 0.0164), _s(4, False, 0.0300)]
    best = best_threshold(scored, "rrf")
    assert best.threshold == 0.0323 and best.answered == 1.0 and best.refused == 1.0
    out = report(scored)
    assert out["rrf"]["default"]["threshold"] == rrf_thresholds(60)[1]


def test_unanswerable_set_is_well_formed() -> None:
    rows = [json.loads(line) for line in (REPO / "eval" / "gate" / "unanswerable.jsonl").read_text().splitlines()]
    assert len(rows) == 40 and len({r["_id"] for r in rows}) == 40
    assert {r["kind"] for r in rows} == {"off-domain", "near-domain"}
