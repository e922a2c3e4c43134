"""ragfr_tools.eval.gate_anymodel's ceiling (issue 47 item 3): the best thresholds chosen on a set's own rows can
do against the goals, with and without the strong subject rule. Synthetic p values: the arithmetic is what is
under test (the figures it reports come from the stored gate-corpora rows, docs/retrieval-quality.md)."""

from __future__ import annotations

from typing import Any

from ragfr_tools.eval.gate_anymodel import ceiling


def _rows(kind: str, ps: list[float], strong: int = 0) -> list[dict[str, Any]]:
    return [{"kind": kind, "features": {"p": p}, "absent": {"strong": True} if i < strong else None}
            for i, p in enumerate(ps)]


def test_the_ceiling_is_the_best_operating_point_of_each_goal() -> None:
    rows = _rows("answerable", [0.9] * 90 + [0.5] * 8 + [0.1] * 2) + _rows("off", [0.2] * 90 + [0.6] * 10)
    best = ceiling(lambda f: f["p"], rows)["gate"]
    # refusing at most 2 % of the answerable: caution from 0.5, which refuses the 90 % of off-domain below it
    assert best["refuse_2"] == {"caution_at": 0.5, "off_refused": 0.9}
    # answering at most 3 % of the off-domain: answer from 0.9, which answers the 90 % of answerable above it
    assert best["answer_3"] == {"answer_at": 0.9, "answerable_answered": 0.9}


def test_strong_absences_below_the_answer_threshold_bound_the_ceiling() -> None:
    # off-domain questions score 0.5, so answering at most 3 % of them means answering from 0.9; the 5 % of the
    # answerable whose subject no passage holds score 0.4: below it, the subject rule refuses them whatever the
    # caution threshold, so no threshold refuses at most 2 % of the answerable
    rows = _rows("answerable", [0.4] * 5 + [0.9] * 95, strong=5) + _rows("off", [0.5] * 100)
    best = ceiling(lambda f: f["p"], rows)
    assert best["gate"]["refuse_2"] == {"caution_at": 0.4, "off_refused": 0.0}
    assert best["gate+strong"]["refuse_2"] is None
    assert best["gate+strong"]["answer_3"] == {"answer_at": 0.9, "answerable_answered": 0.95}
    assert (best["answerable"], best["answerable_strong"]) == (100, 5)


def test_strong_absences_the_gate_answers_are_cautioned_not_refused() -> None:
    rows = _rows("answerable", [0.95] * 5 + [0.9] * 95, strong=5) + _rows("off", [0.5] * 100)
    best = ceiling(lambda f: f["p"], rows)
    assert best["gate"]["answer_3"] == {"answer_at": 0.9, "answerable_answered": 1.0}
    assert best["gate+strong"]["answer_3"] == {"answer_at": 0.9, "answerable_answered": 0.95}
    assert best["gate+strong"]["refuse_2"] == {"caution_at": 0.9, "off_refused": 1.0}


def test_a_set_without_answerable_or_off_domain_rows_has_no_ceiling() -> None:
    assert ceiling(lambda f: f["p"], _rows("answerable", [0.9])) == {}
