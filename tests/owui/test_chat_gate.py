"""ragfr.owui.runtime.chat_gate on Open WebUI-shaped sources (no server): the decision, what the model gets, and that
every failure refuses. The same code runs inside Open WebUI in tests/owui/test_e2e.py."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest

from ragfr.gate.rank import GateConfig
from ragfr.owui.runtime import chat_gate, provenance
from ragfr.owui.runtime.chat_gate import METADATA_KEY, NO_PASSAGE, REFUSAL, gate, refusal_response

RRF = GateConfig.for_scale("rrf")
KB = [{"type": "collection", "id": "kb1"}]


def source(*scores: tuple[float, float], name: str = "contrat.txt") -> dict[str, Any]:
    """One Open WebUI source: passages with (own RRF, best RRF of the search)."""
    token = provenance.issue()  # as the adapter stamps each result: the gate reads passages made here only
    return {
        "source": {"type": "collection", "id": "kb1", "name": "Contrats"},
        "document": [f"passage {i}" for i in range(len(scores))],
        "metadata": [{"name": name, "source": name, "ragfr_chunk_id": f"c{i}", "ragfr_rrf_score": own,
                      "ragfr_top_rrf_score": top, "ragfr_provenance": token}
                     for i, (own, top) in enumerate(scores)],
        "distances": [0.9 - i / 10 for i in range(len(scores))],
    }


def run(sources: list[dict[str, Any]], files: list[dict[str, Any]] | None = None, **kw: Any) -> tuple[Any, dict]:
    metadata: dict[str, Any] = {"files": KB if files is None else files}
    args = {"question": "Quel délai ?", "searched": True, "reranked": False, **kw}
    return gate(metadata, sources, **args), metadata


def test_above_the_gate_at_most_three_passages_above_the_noise_floor_reach_the_model() -> None:
    top = RRF.evidence_threshold + 0.0005
    scores = [(top, top), (0.02, top), (0.011, top), (0.019, top), (0.018, top)]
    out, metadata = run([source(*scores)])
    assert metadata[METADATA_KEY]["grounded"] is True
    kept = out[0]["metadata"]
    assert [m["ragfr_chunk_id"] for m in kept] == ["c0", "c1", "c3"]  # c2 (0.011) is below the 1/80 floor
    assert len(out[0]["distances"]) == 3 and all(m["ragfr_gate"] == "answer" for m in kept)
    assert refusal_response({"model": "m"}, metadata, object) is None


def test_the_best_score_of_the_search_decides_even_when_open_webui_dropped_that_passage() -> None:
    """Open WebUI re-scores ragfr's candidates and keeps a few: the gate judges the search's best RRF."""
    survivors = [(0.016, RRF.evidence_threshold + 0.001), (0.015, RRF.evidence_threshold + 0.001)]
    assert run([source(*survivors)])[1][METADATA_KEY]["grounded"] is True
    weak = [(0.016, 0.0165)]
    assert run([source(*weak)])[1][METADATA_KEY]["grounded"] is False


def test_below_the_gate_a_fixed_french_refusal_lists_the_closest_passages_with_file_names() -> None:
    out, metadata = run([source((0.016, 0.0164), (0.0159, 0.0164), (0.0158, 0.0164), (0.0157, 0.0164))])
    decision = metadata[METADATA_KEY]
    assert decision["grounded"] is False and "below the evidence threshold" in decision["reason"]
    assert decision["message"].startswith(REFUSAL) and decision["message"].count("**contrat.txt**") == 3
    assert all(m["ragfr_gate"] == "refuse" and m["ragfr_gate_top_score"] == 0.0164 for m in out[0]["metadata"])
    reply = refusal_response({"model": "m", "stream": False}, metadata, object)
    assert reply["choices"][0]["message"]["content"] == decision["message"]


def test_streamed_refusal_is_openai_sse() -> None:
    _, metadata = run([source((0.016, 0.0164))])
    made: dict[str, Any] = {}

    def streaming(body: Any, **kw: Any) -> Any:
        made.update(kw, body=list(body))
        return made

    refusal_response({"model": "m", "stream": True}, metadata, streaming)
    assert made["media_type"] == "text/event-stream" and made["body"][-1] == "data: [DONE]\n\n"
    first = json.loads(made["body"][0][len("data: "):])
    assert first["choices"][0]["delta"]["content"].startswith(REFUSAL)


def test_knowledge_searched_but_nothing_from_ragfr_is_refused() -> None:
    """Retrieval raised, or ragfr fell back to Open WebUI's legacy search (no ragfr scores): fail closed."""
    legacy = {"source": {"id": "kb1"}, "document": ["x"], "metadata": [{"name": "contrat.txt"}]}
    out, metadata = run([legacy])
    assert metadata[METADATA_KEY]["grounded"] is False
    assert metadata[METADATA_KEY]["message"] == f"{REFUSAL}\n\n{NO_PASSAGE}"
    assert out[0]["metadata"][0]["ragfr_gate"] == "refuse"


def test_an_error_inside_the_gate_refuses_and_shows_only_an_incident_id(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("boom at host=db.internal port=5432")

    monkeypatch.setattr(chat_gate.rank, "decide", broken)
    with caplog.at_level(logging.INFO, logger="ragfr.gate"):
        out, metadata = run([source((0.05, 0.05))])
    decision = metadata[METADATA_KEY]
    incident = decision["incident"]
    assert decision["grounded"] is False and re.fullmatch(r"[0-9a-f]{8}", incident)
    assert decision["message"] == f"{chat_gate.UNAVAILABLE['failed']}\n\n" + chat_gate.INCIDENT_LINE.format(
        incident=incident)
    shown = json.dumps([decision, out], ensure_ascii=False)  # what reaches Open WebUI and its chat history
    assert "boom" not in shown and "RuntimeError" not in shown and "db.internal" not in shown
    assert out[0]["metadata"][0]["ragfr_gate_reason"] == f"evidence gate failed: incident {incident}"
    logged = [json.loads(r.getMessage()) for r in caplog.records if r.getMessage().startswith("{")]
    assert logged[-1]["incident"] == incident and "RuntimeError: boom at host=db.internal" in logged[-1]["reason"]
    assert any(incident in r.getMessage() and r.exc_info for r in caplog.records)  # the traceback, with the id


def test_nothing_to_judge_is_not_gated() -> None:
    tool = {"source": {"name": "calculator"}, "document": ["4"], "metadata": [{"source": "calculator"}]}
    out, metadata = run([tool], files=[])
    assert out == [tool] and METADATA_KEY not in metadata
    full = [{"type": "collection", "id": "kb1", "context": "full"}]
    assert METADATA_KEY not in run([], files=full)[1]
    assert METADATA_KEY not in run([], searched=False)[1]  # a model with File Context off retrieves nothing


def test_cross_encoder_scale_only_when_reranked_and_calibrated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGFR_GATE_CE_EVIDENCE", raising=False)
    assert chat_gate.scale_for(reranked=True) == "rrf"
    monkeypatch.setenv("RAGFR_GATE_CE_EVIDENCE", "1.5")
    assert chat_gate.scale_for(reranked=False) == "rrf"
    src = source((0.05, 0.05))
    src["metadata"][0]["score"] = 0.9  # Open WebUI's sigmoid: logit 2.197 >= 1.5
    _, metadata = run([src], reranked=True)
    decision = metadata[METADATA_KEY]
    assert decision["scale"] == "cross-encoder" and decision["grounded"] is True
    assert decision["top_score"] == pytest.approx(2.1972, abs=1e-3) and decision["evidence_threshold"] == 1.5


@pytest.mark.parametrize("kind", ["busy", "unavailable", "failed", "refused"])
def test_a_search_that_could_not_run_is_refused_with_its_kind_and_an_incident_id_not_its_details(
    kind: str, caplog: pytest.LogCaptureFixture,
) -> None:
    """chat_search's marker passage (busy, failed, refused) beside a good search of another collection: the
    question is refused with the kind's message and an incident id, no model is called, and the reason
    (a redacted DSN, a host, libpq's first line) reaches only the gate log, under that id."""
    from ragfr.owui.runtime.chat_search import unavailable_result
    from ragfr.owui.runtime.errors import SearchUnavailable

    why = "connection to server at db.internal (10.0.0.7), port 5432 failed (host=db.internal user=owui)"
    marker = unavailable_result("kb2", SearchUnavailable(kind, why), "0badc0de")
    failed = {"source": {"type": "collection", "id": "kb2"}, "document": marker["documents"][0],
              "metadata": marker["metadatas"][0], "distances": marker["distances"][0]}
    top = RRF.evidence_threshold + 0.001
    with caplog.at_level(logging.INFO, logger="ragfr.gate"):
        out, metadata = run([source((top, top)), failed])
    decision = metadata[METADATA_KEY]
    assert decision["grounded"] is False and decision["incident"] == "0badc0de"
    assert decision["message"] == chat_gate.unavailable_message(kind, "0badc0de")
    assert decision["message"].startswith(chat_gate.UNAVAILABLE[kind]) and REFUSAL not in decision["message"]
    assert decision["message"].endswith("0badc0de")
    assert decision["reason"] == f"search {kind}: incident 0badc0de"
    assert len(out) == 1 and out[0]["source"]["id"] == "ragfr-evidence-gate"  # no passage reaches the model
    assert out[0]["document"] == [f"search {kind}: incident 0badc0de"]
    assert out[0]["metadata"][0]["ragfr_gate_reason"] == f"search {kind}: incident 0badc0de"
    assert "db.internal" not in json.dumps([decision, out]) and "5432" not in json.dumps([decision, out])
    reply = refusal_response({"model": "m"}, metadata, object)
    assert reply is not None and reply["choices"][0]["message"]["content"] == decision["message"]
    logged = json.loads(caplog.records[-1].getMessage())
    assert logged["event"] == "gate" and logged["incident"] == "0badc0de"
    assert logged["reason"] == f"search {kind}: {kind} (incident 0badc0de): {why}"


CASES = {
    "answered on rrf": ([0.0330, 0.0200, 0.0110], None),
    "below the evidence threshold": ([0.0300, 0.0160], None),
    "all below the noise floor": ([0.0120, 0.0110], None),
    "reranked, ce calibrated: answered": ([0.0164, 0.0160], [2.5, -1.0]),
    "reranked, ce calibrated: refused": ([0.0330, 0.0320], [0.75, -6.0]),
}


@pytest.mark.parametrize("calibrated", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_ragfr_ask_and_the_chat_take_the_same_decision_on_the_same_search(
    case: str, calibrated: bool, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One decision path (ragfr.gate.rank.scale_for + judge): the same hits give `ragfr ask` and the chat
    the same scale, verdict, reason and kept passages, with or without a calibrated cross-encoder threshold.
    Before, `ask` gated a reranked search on the cross-encoder's uncalibrated default where the chat used RRF."""
    import math

    from ragfr.ask import answer
    from ragfr.retrieval.types import Hit, SearchResult

    if calibrated:
        monkeypatch.setenv("RAGFR_GATE_CE_EVIDENCE", "1.5")
    else:
        monkeypatch.delenv("RAGFR_GATE_CE_EVIDENCE", raising=False)
    rrf, logits = CASES[case]
    hits = [Hit(id=f"c{i}", text=f"passage {i}", metadata={}, collection_name="kb1", rrf_score=s,
                rerank_score=None if logits is None else logits[i]) for i, s in enumerate(rrf)]
    called: list[Any] = []

    class Chat:
        def chat(self, model: str, messages: list[dict[str, str]]) -> str:
            called.append(messages)
            return "[c0]"

    asked = answer(SearchResult("Quel délai ?", hits, False, None, {"rrf_k": 60}), Chat(), "m").evidence
    src = source(*[(h.rrf_score, max(rrf)) for h in hits])
    if logits is not None:
        for meta, logit in zip(src["metadata"], logits, strict=True):
            meta["score"] = 1 / (1 + math.exp(-logit))  # what Open WebUI's reranker stamps: a sigmoid
    chat = run([src], reranked=logits is not None)[1][METADATA_KEY]
    assert (chat["scale"], chat["grounded"], chat["reason"]) == (asked.scale, asked.grounded, asked.reason)
    assert chat["scale"] == ("cross-encoder" if calibrated and logits is not None else "rrf")
    if asked.grounded:
        assert [p["chunk"] for p in chat["passages"]] == [h.id for h in asked.kept][:3]
    assert bool(called) == asked.grounded


def test_ragfr_ask_and_the_chat_decide_through_the_one_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ragfr.gate.rank.decide` is the decision of both surfaces: replaced here, it decides for both (the
    chat reads its passages' scores and translates the Decision back; `ask` reads its hits' scores)."""
    from ragfr.ask import answer
    from ragfr.gate import rank
    from ragfr.gate.rank import Decision, Outcome
    from ragfr.retrieval.types import Hit, SearchResult

    seen: list[list[float | None]] = []

    def refuse_all(scored: Any, gate_cfg: GateConfig, top: float | None = None, **evidence: Any) -> Decision[Any]:
        scored = list(scored)
        seen.append([s for _, s in scored])
        return Decision(Outcome.REFUSE, "the one function said no", gate_cfg.scale, top,
                        gate_cfg.evidence_threshold, gate_cfg.noise_floor, [], scored)

    monkeypatch.setattr(rank, "decide", refuse_all)
    strong = RRF.evidence_threshold + 0.01
    chat = run([source((strong, strong))])[1][METADATA_KEY]
    hits = [Hit(id="c0", text="passage 0", metadata={}, collection_name="kb1", rrf_score=strong)]
    asked = answer(SearchResult("Quel délai ?", hits, False, None, {"rrf_k": 60}), object(), "m")  # type: ignore[arg-type]
    assert seen == [[strong], [strong]]
    assert (chat["decision"], chat["reason"]) == ("refuse", "the one function said no")
    assert (asked.grounded, asked.evidence.reason) == (False, "the one function said no")


def test_every_kind_of_search_that_could_not_run_has_its_french_message() -> None:
    from ragfr.owui.runtime.errors import SearchUnavailable

    assert set(chat_gate.UNAVAILABLE) == set(SearchUnavailable.KINDS)
