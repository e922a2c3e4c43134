"""The gate's subject rule (issue 47 items 2 and 4): a STRONG absence (a head noun of the question's subject in
no passage of the searched collections) lowers the verdict one step, under the fitted gate (answer -> caution,
caution -> refuse) and under the rank rule (answer -> caution); a weak or top-only absence changes nothing and
is only told beside a caution or refusal; the French sentence reaches `reason`, `reason_fr` and the summary
every surface logs, and survives the JSON the chat's passages carry it in."""

from __future__ import annotations

import pytest
from tests.support.gate import gate_on

from ragfr.analysis.subject import Absence, absent_subject, subject_terms
from ragfr.gate import fitted, subject
from ragfr.gate.rank import GateConfig, Outcome, decide, with_subject

PV = "Les panneaux photovoltaïques sont-ils couverts ?"
REASON = "Aucun des documents joints ne mentionne « panneaux photovoltaïques »."


def absence(strong: bool, where: str = "collection") -> Absence:
    subjects = subject_terms(PV)
    df = {"panneau": 0 if strong else 3, "photovolta": 0}
    found = absent_subject(subjects, df if where == "collection" else {"panneau": 3, "photovolta": 2},
                           ["Les panneaux solaires sont exclus.", "Article 2.", "Article 3."])
    assert found is not None and found.where == where and found.strong is strong
    return found


@pytest.mark.parametrize(("before", "after"), [(Outcome.ANSWER, Outcome.CAUTION), (Outcome.CAUTION, Outcome.REFUSE),
                                               (Outcome.REFUSE, Outcome.REFUSE)])
def test_a_strong_absence_lowers_the_verdict_one_step_and_says_why(before: Outcome, after: Outcome) -> None:
    outcome, reason, told, changed = with_subject(before, "why", absence(strong=True))
    assert outcome is after and told is not None and reason.startswith("why; ") and reason.endswith(REASON)
    assert told.reason_fr() == REASON
    assert changed == (None if before is Outcome.REFUSE else f"{before.value} -> {after.value}")


@pytest.mark.parametrize("where", ["collection", "top"])
def test_a_weak_or_top_only_absence_changes_no_verdict_and_is_told_only_beside_a_caution_or_refusal(where) -> None:
    found = absence(strong=False, where=where)
    assert with_subject(Outcome.ANSWER, "why", found) == (Outcome.ANSWER, "why", None, None)
    for verdict in (Outcome.CAUTION, Outcome.REFUSE):
        outcome, reason, told, changed = with_subject(verdict, "why", found)
        assert (outcome, told, changed) == (verdict, found, None) and reason == f"why; {found.reason_fr()}"
    assert with_subject(Outcome.ANSWER, "why", None) == (Outcome.ANSWER, "why", None, None)


def scored(top: float) -> list[tuple[str, float | None]]:
    return [("c0", top), ("c1", 0.02)]


def test_decide_applies_it_under_the_fitted_gate(monkeypatch) -> None:
    monkeypatch.setattr(fitted, "load", lambda model: gate_on("cos1", 1.0) if model == "m" else None)
    gate = GateConfig.for_scale("rrf")
    strong = absence(strong=True)
    answered = decide(scored(0.02), gate, evidence={"cos1": 2.0}, embedding_model="m")  # p 0.88
    assert answered.outcome is Outcome.ANSWER and answered.reason_fr is None
    d = decide(scored(0.02), gate, evidence={"cos1": 2.0}, embedding_model="m", absence=strong)
    assert (d.outcome, d.rule, d.subject_changed) == (Outcome.CAUTION, "evidence", "answer -> caution")
    assert d.reason_fr == REASON and d.reason.startswith("evidence p=0.881 >= answer threshold")
    summary = d.summary()
    assert summary["decision"] == "caution" and summary["reason_fr"] == REASON
    assert summary["absent_subject"]["subject"] == "panneaux photovoltaïques" and summary["absent_subject"]["strong"]
    d = decide(scored(0.02), gate, evidence={"cos1": 1.0}, embedding_model="m", absence=strong)  # p 0.73
    assert (d.outcome, d.subject_changed, d.grounded) == (Outcome.REFUSE, "caution -> refuse", False)
    # a weak absence leaves the caution a caution, and explains it
    d = decide(scored(0.02), gate, evidence={"cos1": 1.0}, embedding_model="m", absence=absence(strong=False))
    assert (d.outcome, d.subject_changed, d.reason_fr) == (Outcome.CAUTION, None, REASON)


def test_decide_applies_it_under_the_rank_rule(monkeypatch) -> None:
    monkeypatch.setattr(fitted, "load", lambda model: None)
    gate = GateConfig.for_scale("rrf")
    top = 2 / 61  # rank 1 in both arms: the rank rule answers
    assert decide(scored(top), gate, embedding_model="x").outcome is Outcome.ANSWER
    d = decide(scored(top), gate, embedding_model="x", absence=absence(strong=True))
    assert (d.outcome, d.rule, d.subject_changed, d.reason_fr) == (Outcome.CAUTION, "rank", "answer -> caution",
                                                                   REASON)
    d = decide(scored(0.01), gate, embedding_model="x", absence=absence(strong=True))  # refused by its score
    assert (d.outcome, d.subject_changed, d.reason_fr) == (Outcome.REFUSE, None, REASON)
    d = decide(scored(top), gate, embedding_model="x", absence=absence(strong=False))
    assert (d.outcome, d.absence, d.reason_fr) == (Outcome.ANSWER, None, None)


def test_the_absence_travels_as_json_and_several_searches_read_the_least_severe() -> None:
    strong, weak, top = absence(strong=True), absence(strong=False), absence(strong=False, where="top")
    for a in (strong, weak, top, None):
        assert subject.from_json(subject.to_json(a)) == a
    assert subject.to_json(strong)["reason_fr"] == REASON
    assert subject.least([strong, weak]) == weak and subject.least([weak, top]) == top
    assert subject.least([strong, None]) is None and subject.least([]) is None
    with pytest.raises(ValueError):
        subject.from_json({**subject.to_json(strong), "where": "ailleurs"})
