"""The chat's evidence gate with a fitted gate (issue 38 item 3): the decision is gate.decide's on the
search's evidence features stamped on every passage; a caution lets the passages through with a French
caution source the analyst sees and the model reads; the rank rule runs only when no fitted gate loads."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from tests.support.gate import gate_on

from ragfr.gate import fitted
from ragfr.gate.features import FEATURES
from ragfr.owui.runtime import provenance
from ragfr.owui.runtime.chat_gate import (
    CAUTION,
    CAUTION_LINE,
    CLOSEST,
    METADATA_KEY,
    REFUSAL,
    caution_line,
    caution_status,
    gate,
    refusal_response,
    show_caution,
)

KB = [{"type": "collection", "id": "kb1"}]


def source(cos1: float, model: str = "m", top: float = 0.02) -> dict[str, Any]:
    evidence = json.dumps({**dict.fromkeys(FEATURES, 0.0), "cos1": cos1})
    token = provenance.issue()
    return {"source": {"type": "collection", "id": "kb1", "name": "Contrats"},
            "document": ["passage 0", "passage 1"],
            "metadata": [{"name": "contrat.txt", "ragfr_chunk_id": f"c{i}", "ragfr_rrf_score": top,
                          "ragfr_top_rrf_score": top, "ragfr_embedding_model": model, "ragfr_evidence": evidence,
                          "ragfr_provenance": token} for i in range(2)]}


def run(sources: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    metadata: dict[str, Any] = {"files": KB}
    return gate(metadata, sources, question="Quel délai ?", searched=True, reranked=False), metadata


def test_the_chat_answers_cautions_and_refuses_by_the_fitted_gate(monkeypatch) -> None:
    monkeypatch.setattr(fitted, "load", lambda model: gate_on("cos1", 1.0) if model == "m" else None)
    out, metadata = run([source(2.0)])  # p 0.88: answer, although the rank rule would refuse (top 0.02)
    assert metadata[METADATA_KEY]["decision"] == "answer" and metadata[METADATA_KEY]["rule"] == "evidence"
    assert all(m["ragfr_gate_rule"] == "evidence" for m in out[0]["metadata"]) and len(out) == 1
    assert caution_status(metadata) is None  # no status line above an answer

    out, metadata = run([source(1.0)])  # p 0.73: caution
    assert metadata[METADATA_KEY]["decision"] == "caution" and metadata[METADATA_KEY]["grounded"] is True
    assert out[-1]["document"] == [CAUTION] and out[-1]["metadata"][0]["ragfr_gate"] == "caution"
    assert out[0]["document"] == ["passage 0", "passage 1"]  # the passages still reach the model
    assert refusal_response({"model": "x"}, metadata, object) is None  # the model is called
    # ... and the analyst reads the caution above the reply without a click (Open WebUI's status line)
    assert caution_status(metadata) == {"type": "status", "data": {"action": "ragfr_caution",
                                                                   "description": CAUTION_LINE, "done": True}}
    assert CAUTION.startswith(CAUTION_LINE)

    _, metadata = run([source(-1.0)])  # p 0.27: refuse, no model call
    assert metadata[METADATA_KEY]["decision"] == "refuse"
    assert refusal_response({"model": "x", "stream": False}, metadata, object) is not None
    assert caution_status(metadata) is None and caution_status(None) is None

    # several queries (Open WebUI's query generation): the most favourable search decides
    _, metadata = run([source(-1.0), source(2.0)])
    assert metadata[METADATA_KEY]["decision"] == "answer"


def test_with_no_fitted_gate_at_all_the_rank_rule_decides_and_says_so(monkeypatch) -> None:
    """`fitted.load` returns None only when the package lacks the model-free gate (a broken install; every model
    gets at least that one): the chat still decides, by the rank rule, and its reason says why."""
    monkeypatch.setattr(fitted, "load", lambda model: None)
    _, metadata = run([source(2.0, model="local:unfitted", top=0.04)])
    decision = metadata[METADATA_KEY]
    assert decision["rule"] == "rank" and decision["decision"] == "answer"
    assert "no fitted evidence gate for local:unfitted" in decision["reason"]


def test_the_caution_line_goes_through_open_webuis_emitter_and_a_failed_emit_keeps_the_answer(
        monkeypatch, caplog) -> None:
    monkeypatch.setattr(fitted, "load", lambda model: gate_on("cos1", 1.0) if model == "m" else None)
    emitted: list[dict[str, Any]] = []

    async def emitter(event: dict[str, Any]) -> None:
        emitted.append(event)

    async def get_event_emitter(info: dict[str, Any]) -> Any:
        return emitter

    async def broken(info: dict[str, Any]) -> Any:
        raise KeyError("message_id")

    _, caution = run([source(1.0)])
    _, answer = run([source(2.0)])
    asyncio.run(show_caution(answer, get_event_emitter))
    assert emitted == []
    asyncio.run(show_caution(caution, get_event_emitter))
    assert emitted == [caution_status(caution)]
    with caplog.at_level(logging.WARNING, logger="ragfr.gate"):
        asyncio.run(show_caution(caution, broken))  # no exception: the model is still called
    assert "caution_status_failed" in caplog.text and "KeyError" in caplog.text


PV = "Aucun des documents joints ne mentionne « panneaux photovoltaïques »."


def absent_json(strong: bool = True, where: str = "collection") -> str:
    """What the adapter stamps (native.ranks_metadata): the search's absence as ragfr.gate.subject.to_json."""
    from ragfr.analysis.subject import Absence, Subject
    from ragfr.gate import subject

    pv = Subject("panneaux photovoltaïques", ("panneau", "photovolta"), (("panneau", "photovolta"),))
    missing = ("panneau",) if strong else ("photovolta",)
    return json.dumps(subject.to_json(Absence(pv, where, missing, strong=strong)))  # type: ignore[arg-type]


def with_absence(src: dict[str, Any], value: str) -> dict[str, Any]:
    for meta in src["metadata"]:
        meta["ragfr_absent_subject"] = value
    return src


def test_a_subject_no_document_names_cautions_an_answer_and_the_analyst_reads_why(monkeypatch) -> None:
    """Issue 47 item 4 in the chat: a strong absence makes the fitted gate's answer a caution; the caution line
    above the reply, the caution source and the gate's reason carry the French sentence."""
    monkeypatch.setattr(fitted, "load", lambda model: gate_on("cos1", 1.0) if model == "m" else None)
    out, metadata = run([with_absence(source(2.0), absent_json())])  # p 0.88: answer without the rule
    decision = metadata[METADATA_KEY]
    assert (decision["decision"], decision["subject_changed"], decision["reason_fr"]) == (
        "caution", "answer -> caution", PV)
    assert decision["reason"].endswith(PV) and decision["absent_subject"]["subject"] == "panneaux photovoltaïques"
    assert caution_status(metadata)["data"]["description"] == (
        "Prudence : aucun des documents joints ne mentionne « panneaux photovoltaïques ».")
    assert out[-1]["document"][0].startswith(f"{CAUTION_LINE} {PV} ") and out[-1]["document"][0].endswith(
        CAUTION[len(CAUTION_LINE):])
    assert out[-1]["metadata"][0]["ragfr_gate_reason"].endswith(PV)


def test_a_subject_no_document_names_refuses_a_caution_with_its_reason_in_the_reply(monkeypatch) -> None:
    monkeypatch.setattr(fitted, "load", lambda model: gate_on("cos1", 1.0) if model == "m" else None)
    _, metadata = run([with_absence(source(1.0), absent_json())])  # p 0.73: caution without the rule
    decision = metadata[METADATA_KEY]
    assert (decision["decision"], decision["subject_changed"]) == ("refuse", "caution -> refuse")
    reply = refusal_response({"model": "x", "stream": False}, metadata, object)
    text = reply["choices"][0]["message"]["content"]
    assert text.startswith(f"{REFUSAL} {PV}\n\n{CLOSEST}"), text


def test_a_weak_absence_changes_nothing_and_only_explains_a_caution(monkeypatch) -> None:
    monkeypatch.setattr(fitted, "load", lambda model: gate_on("cos1", 1.0) if model == "m" else None)
    _, metadata = run([with_absence(source(2.0), absent_json(strong=False))])
    assert metadata[METADATA_KEY]["decision"] == "answer" and metadata[METADATA_KEY]["reason_fr"] is None
    _, metadata = run([with_absence(source(1.0), absent_json(strong=False))])
    assert (metadata[METADATA_KEY]["decision"], metadata[METADATA_KEY]["reason_fr"]) == ("caution", PV)
    assert caution_status(metadata)["data"]["description"] == caution_line(PV)


def test_several_searches_read_the_most_favourable_absence_and_only_the_searchs_own(monkeypatch) -> None:
    monkeypatch.setattr(fitted, "load", lambda model: gate_on("cos1", 1.0) if model == "m" else None)
    # one of Open WebUI's queries found the subject: no absence, the answer stands
    _, metadata = run([with_absence(source(2.0), absent_json()), with_absence(source(2.0), "null")])
    assert metadata[METADATA_KEY]["decision"] == "answer" and metadata[METADATA_KEY]["absent_subject"] is None
    # a stored chunk's metadata (no provenance token of this process) cannot claim an absence
    forged = with_absence(source(2.0), absent_json())
    for meta in forged["metadata"]:
        meta["ragfr_provenance"] = "forged"
    _, metadata = run([forged, with_absence(source(2.0), "null")])
    assert metadata[METADATA_KEY]["decision"] == "answer"
    # a value that is not an absence reads as none
    _, metadata = run([with_absence(source(2.0), '{"where": "ailleurs"}')])
    assert metadata[METADATA_KEY]["decision"] == "answer"
