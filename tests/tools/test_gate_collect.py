"""The gate fit's label check (ragfr_tools.eval.gate_collect): whether a PIAF question's annotated answer is
written in the passages its search returned, so a near-domain question that another article answers is
counted apart instead of as a gate error."""

from __future__ import annotations

from ragfr_tools.eval.gate_collect import answer_in, answer_spans


def test_an_answer_is_found_whatever_its_case_and_spacing() -> None:
    passages = ["Marée\n\nLa Lune est à   384 400 KM de la Terre.", "Autre passage."]
    assert answer_in(("384 400 km",), passages) is True
    assert answer_in(("385 000 km", "à 384 400 km"), passages) is True
    assert answer_in(("Soleil",), passages) is False
    assert answer_in((), passages) is None  # a question without an annotated answer is not judged


def test_answer_spans_keep_every_non_empty_answer_by_question_id() -> None:
    data = {"data": [{"title": "T", "paragraphs": [{"context": "c", "qas": [
        {"id": "q1", "question": "?", "answers": [{"text": "1998", "answer_start": 0}, {"text": " "}]},
        {"id": "q2", "question": "?", "answers": []}]}]}]}
    assert answer_spans(data) == {"q1": ("1998",), "q2": ()}
