"""gate_rates' upper bounds (issue 29 item 4): what the best rule on the test questions themselves could
reach, one score or both. Geometry fixed by hand: which rule can separate which questions is the point."""

from __future__ import annotations

from typing import Any

from ragfr_tools.reranker.gate_rates import ceiling, ceiling_two_scores


def row(rrf_in: float, ce_in: float, rrf_off: float, ce_off: float) -> dict[str, Any]:
    return {"rrf:in:top": rrf_in, "cross-encoder:in:top": ce_in, "rrf:answerable": True,
            "cross-encoder:answerable": True, "rrf:off:top": rrf_off, "cross-encoder:off:top": ce_off}


def test_two_scores_separate_what_neither_separates_alone() -> None:
    # Answerable questions are high on ONE of the two scores; off-domain ones are low on both, but each
    # score alone overlaps: half the answerable are as low as the off-domain on it.
    rows = [row(0.030, -3.0, 0.010, -3.0) for _ in range(10)] + [row(0.010, 2.0, 0.012, -2.9) for _ in range(10)]
    assert not ceiling(rows, "rrf")["meets_95_90"] and not ceiling(rows, "cross-encoder")["meets_95_90"]
    both = ceiling_two_scores(rows)
    assert both["meets_95_90"] and both["answered"] == 1.0 and both["refused"] == 1.0, both
    assert " or " in both["rule"] or "z(" in both["rule"]


def test_no_rule_separates_identical_scores() -> None:
    rows = [row(0.02, 0.5, 0.02, 0.5) for _ in range(10)]
    both = ceiling_two_scores(rows)
    assert not both["meets_95_90"] and both["margin"] < 0
