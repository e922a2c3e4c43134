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


def _row(qid: str, kind: str, target: str, top: list[str], side: str = "fit", source: str = "piaf",
         relevant: int | None = None) -> dict:
    return {"qid": qid, "kind": kind, "target": target, "top3_ids": top, "side": side, "source": source,
            "text": f"question {qid}", "relevant_rank": relevant, "features": {}}


def test_answerability_pairs_hold_the_answering_passage_and_the_other_searches_top_ones() -> None:
    """ragfr_tools.eval.answerability's training pairs: the positive is the question's own paragraph where its
    search ranked it (not the top 1 when that is another passage), the negatives the top passage of the same
    question asked where its article is not (near) and of another domain (off); a question whose paragraph
    is not in its top 3 gives no pair."""
    from ragfr_tools.eval.answerability import sample, training_rows

    rows = [_row("q1", "answerable", "piaf", ["a", "p1", "b"], relevant=1),
            _row("q1", "near", "piaf-no-fit", ["n1", "x"]), _row("q1", "off", "golden", ["o1"]),
            _row("q2", "miss", "piaf", ["c", "d", "e"]),
            _row("q2", "near", "piaf-no-fit", ["n2"]), _row("q2", "off", "golden", ["o2"]),
            _row("q3", "answerable", "piaf", ["p3"], side="dev", relevant=0)]
    assert training_rows(rows, 10, seed=1) == [{"query": "question q1", "positive": "p1", "negatives": ["n1", "o1"]}]
    golden = _row("g1", "answerable", "golden", ["g"], side="dev", source="golden", relevant=0)
    assert sample([*rows, golden], "dev", 5, seed=1) == [rows[-1], golden]
