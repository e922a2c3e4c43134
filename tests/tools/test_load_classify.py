"""The load run classifies each reply by the gate's decision on its sources (issue 38 item 3): a caution is its
own outcome, counted with its reason class, neither an answer nor a refusal."""

from __future__ import annotations

from ragfr_tools.load.drive import classify


def reply(decision: str, reason: str) -> dict:
    meta = {"ragfr_gate": decision, "ragfr_gate_reason": reason, "ragfr_chunk_id": "c1"}
    return {"sources": [{"document": ["passage"], "metadata": [meta]}]}


def test_answer_caution_and_refusal_are_three_outcomes() -> None:
    assert classify(reply("answer", "evidence p=0.950 >= answer threshold 0.919"), 0.1).kind == "answered"
    cautioned = classify(reply("caution", "evidence p=0.500 is between the caution threshold 0.113 and the "
                                          "answer threshold 0.919"), 0.1)
    assert cautioned.kind == "cautioned" and cautioned.signature == ("caution", "c1")
    assert cautioned.detail == "evidence p= is between the caution threshold and the answer threshold"
    refused = classify(reply("refuse", "evidence p=0.010 is below the caution threshold 0.113"), 0.1)
    assert refused.kind == "refused" and refused.detail == "evidence p= is below the caution threshold"
