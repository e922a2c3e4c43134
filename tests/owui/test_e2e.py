"""End to end through the REAL Open WebUI 0.12.4 server, patched, with the settings of `make up` / the chart.

Everything goes through Open WebUI's REST API: admin sign-up, a knowledge base, upload of a French contract
(long enough for several chunks with the settings file's CHUNK_SIZE), then chat questions with the knowledge
attached. What the analyst gets is checked against what ragfr logged and what reached the chat model:
  - the question as asked is what ragfr searched (its search log's terms are the question's own);
  - an answerable question: the right passage reaches the model and is cited, ONE chat request;
  - an off-domain question: the fixed French refusal + the closest passages, ZERO chat requests.

Overrides of the settings file: only those `scripts/up.sh` makes on a machine without Ollama (see
tests/owui/stack.py: database, the e5 test double and its prefixes, no downloadable cross-encoder).
None changes retrieval behaviour; query generation, chunking and side tasks are the settings file's.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from ragfr.analysis.french import query_terms
from ragfr.gate.rank import GateConfig
from ragfr.owui.runtime.chat_gate import CAUTION_LINE, CLOSEST, REFUSAL
from ragfr_tools.fixtures import (
    ANSWERABLE,
    FILENAME,
    OFF_DOMAIN,
    TERMITES,
    TERMITES_REASON,
    THEFT_SENTENCE,
    UNSURE,
    UNSURE_REASON,
)
from ragfr_tools.fixtures import CONTRACT as DOCUMENT

from .stack import Server, answer_text, ask, call, knowledge_base, passages

pytestmark = [pytest.mark.owui, pytest.mark.slow]



@pytest.fixture(scope="module")
def contract(owui_server: Server, admin_token: str) -> tuple[Server, str, str]:
    kb = knowledge_base(owui_server, admin_token, "Contrats", {FILENAME: DOCUMENT})
    return owui_server, admin_token, kb


def test_the_contract_is_several_chunks(contract: tuple[Server, str, str]) -> None:
    import psycopg

    server, _, kb = contract
    with psycopg.connect(server.dsn) as conn:
        row = conn.execute("SELECT count(*) FROM document_chunk WHERE collection_name = %s", (kb,)).fetchone()
    assert row is not None and row[0] >= 2, "the document must be several chunks, or retrieval proves nothing"


def test_answerable_question_is_searched_as_asked_and_cited(contract: tuple[Server, str, str]) -> None:
    server, token, kb = contract
    searches_before, chats_before = len(server.log_events("search")), server.double.chat_requests()
    metrics_before = server.metrics()
    reply = ask(server, token, ANSWERABLE, kb)
    chats = server.double.chat_requests() - chats_before
    moved = _moved(metrics_before, server.metrics())
    answer = answer_text(reply)
    print("answer:", answer)

    # The question as asked is what ragfr searched: no model rewrite (ENABLE_RETRIEVAL_QUERY_GENERATION off).
    searches = server.log_events("search")[searches_before:]
    assert searches, "ragfr logged no search for the question"
    assert [s["settings"]["query_terms"] for s in searches] == [query_terms(ANSWERABLE)] * len(searches), searches

    # Above the gate: at most three passages, the theft article among them, the model called once.
    got = passages(reply)
    print("sources:", json.dumps([{"text": d[:70], **{k: v for k, v in m.items() if k.startswith("ragfr_")}}
                                  for d, m in got], ensure_ascii=False, indent=1))
    assert 1 <= len(got) <= 3, got
    assert any(THEFT_SENTENCE in d for d, _ in got), [d[:80] for d, _ in got]
    assert all(m["ragfr_gate"] == "answer" for _, m in got)
    assert chats == 1, f"{chats} chat requests reached the model"
    # The reply quotes the theft sentence and cites its source ([1] = the one file attached).
    assert THEFT_SENTENCE in answer and "[1]" in answer, answer

    gate = server.log_events("gate")[-1]
    expected = GateConfig.for_scale("rrf")
    assert gate["decision"] == "answer" and gate["scale"] == "rrf"
    assert gate["evidence_threshold"] == expected.evidence_threshold and gate["top_score"] >= expected.evidence_threshold
    assert gate["query_terms"] == query_terms(ANSWERABLE)
    # A knowledge base of a few chunks is scored exactly in the chat too (issue 39): its answer depends on
    # its own rows only, and the search log, the passages and the gate log say so.
    assert all(s["arms"]["semantic"]["scope"] == "collections" for s in searches), searches
    assert all(m["ragfr_vector_scope"] == "collections" for _, m in got) and gate["vector_scope"] == ["collections"]

    # The Prometheus endpoint counted exactly what happened: each logged search, timed per arm; one grant.
    n = len(searches)
    assert moved(SEARCHES_OK) == n and moved(("ragfr_search_duration_seconds_count", ())) == n, moved
    assert moved(("ragfr_search_arm_duration_seconds_count", (("arm", "lexical"),))) == n
    assert moved(("ragfr_search_arm_duration_seconds_count", (("arm", "vector"),))) == n
    assert moved(GRANTS) == 1 and moved(REFUSALS) == 0


def test_off_domain_question_is_refused_without_a_model_call(contract: tuple[Server, str, str]) -> None:
    server, token, kb = contract
    searches_before, chats_before = len(server.log_events("search")), server.double.chat_requests()
    metrics_before = server.metrics()
    reply = ask(server, token, OFF_DOMAIN, kb)
    chats = server.double.chat_requests() - chats_before
    moved = _moved(metrics_before, server.metrics())
    answer = answer_text(reply)
    print("answer:", answer)

    assert chats == 0, f"{chats} chat requests reached the model below the evidence gate"
    assert answer.startswith(REFUSAL) and CLOSEST in answer and FILENAME in answer, answer
    searches = server.log_events("search")[searches_before:]
    assert searches and all(s["settings"]["query_terms"] == query_terms(OFF_DOMAIN) for s in searches), searches

    gate = server.log_events("gate")[-1]
    assert gate["decision"] == "refuse" and gate["top_score"] < gate["evidence_threshold"], gate
    # The decision travels with the sources shown under the refusal, for the operator.
    got = passages(reply)
    assert 1 <= len(got) <= 3
    for _, meta in got:
        assert meta["ragfr_gate"] == "refuse"
        assert meta["ragfr_gate_top_score"] == gate["top_score"]
        assert meta["ragfr_gate_evidence_threshold"] == gate["evidence_threshold"]
        # e5's fitted evidence gate decides (issue 38): its reason names the caution threshold missed
        assert meta["ragfr_gate_rule"] == "evidence" and "below the caution threshold" in meta["ragfr_gate_reason"]
    # Counted on the Prometheus endpoint: one refusal, no grant, the searches behind it.
    assert moved(REFUSALS) == 1 and moved(GRANTS) == 0, moved
    assert moved(SEARCHES_OK) == len(searches)



def test_a_subject_the_contract_never_names_is_told_in_french(contract: tuple[Server, str, str]) -> None:
    """Issue 47 item 4 through Open WebUI: « termites » is in no chunk (a strong absence): the e5 gate's caution
    becomes a refusal whose reply names it, with no model call; « voiture » neither: the gate's answer becomes a
    caution, the model is called once and the caution source and the gate log carry the sentence."""
    server, token, kb = contract
    chats_before = server.double.chat_requests()
    answer = answer_text(ask(server, token, TERMITES, kb))
    gate = server.log_events("gate")[-1]
    print("termites:", answer, gate)
    assert server.double.chat_requests() == chats_before, "a refusal reached the model"
    assert answer.startswith(f"{REFUSAL} {TERMITES_REASON}\n\n{CLOSEST}"), answer
    assert (gate["decision"], gate["subject_changed"], gate["reason_fr"]) == (
        "refuse", "caution -> refuse", TERMITES_REASON), gate
    assert gate["absent_subject"]["subject"] == "termites" and gate["absent_subject"]["strong"] is True

    reply = ask(server, token, UNSURE, kb)
    gate = server.log_events("gate")[-1]
    print("car:", answer_text(reply), gate)
    assert server.double.chat_requests() == chats_before + 1
    assert (gate["decision"], gate["subject_changed"], gate["reason_fr"]) == (
        "caution", "answer -> caution", UNSURE_REASON), gate
    caution = [d for d, m in passages(reply) if m.get("ragfr_gate") == "caution" and d.startswith(CAUTION_LINE)]
    assert caution and UNSURE_REASON in caution[-1], passages(reply)

def test_metrics_endpoint_serves_well_formed_text_from_the_start(owui_server: Server) -> None:
    """Served by the patched lifespan (not by the first search): every series exists, parsed as exposition text."""
    samples = owui_server.metrics()
    for outcome in ("ok", "timeout", "error"):
        assert ("ragfr_searches_total", (("outcome", outcome),)) in samples
    for check in ("model", "dimension"):
        assert ("ragfr_embedding_space_mismatches_total", (("check", check),)) in samples
    for arm in ("lexical", "vector"):  # the built-in arms' metric labels, which dashboards and alerts name
        assert ("ragfr_search_arm_duration_seconds_count", (("arm", arm),)) in samples
    assert ("ragfr_search_duration_seconds_bucket", (("le", "0.2"),)) in samples
    assert ("ragfr_search_underfilled_total", ()) in samples
    assert any(name.startswith("process_") for name, _ in samples)  # the process collector of the same registry


SEARCHES_OK = ("ragfr_searches_total", (("outcome", "ok"),))
GRANTS = ("ragfr_gate_decisions_total", (("decision", "answer"), ("surface", "chat")))
REFUSALS = ("ragfr_gate_decisions_total", (("decision", "refuse"), ("surface", "chat")))
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _moved(before: Samples, after: Samples) -> Callable[[tuple[str, tuple[tuple[str, str], ...]]], float]:
    def delta(key: tuple[str, tuple[tuple[str, str], ...]]) -> float:
        return after[key] - before[key]

    return delta


def test_streamed_refusal_is_the_same_message(contract: tuple[Server, str, str]) -> None:
    """The browser streams: the refusal must come back on that path too, still without a model call."""
    import urllib.request

    server, token, kb = contract
    chats_before = server.double.chat_requests()
    req = urllib.request.Request(server.url + "/api/chat/completions", method="POST", data=json.dumps({
        "model": "ragfr-extractive-test-double:latest", "stream": True,
        "messages": [{"role": "user", "content": OFF_DOMAIN}], "files": [{"type": "collection", "id": kb}],
    }).encode(), headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        body = resp.read().decode("utf-8")
    text = "".join(
        (json.loads(line[5:]).get("choices") or [{}])[0].get("delta", {}).get("content") or ""
        for line in body.splitlines() if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]")
        and "choices" in line
    )
    assert text.startswith(REFUSAL), body[:2000]
    assert server.double.chat_requests() == chats_before


def test_a_follow_up_is_searched_as_typed_alone(contract: tuple[Server, str, str]) -> None:
    """The documented rule for follow-ups: the last message, verbatim, never merged with earlier turns."""
    server, token, kb = contract
    follow_up = "Et la franchise ?"
    searches_before = len(server.log_events("search"))
    call("POST", server.url + "/api/chat/completions", {
        "model": "ragfr-extractive-test-double:latest", "stream": False,
        "messages": [{"role": "user", "content": ANSWERABLE},
                     {"role": "assistant", "content": "Dans un délai de deux jours ouvrés. [1]"},
                     {"role": "user", "content": follow_up}],
        "files": [{"type": "collection", "id": kb}]}, token)
    searches = server.log_events("search")[searches_before:]
    assert searches and all(s["settings"]["query_terms"] == query_terms(follow_up) for s in searches), searches


def test_no_knowledge_attached_is_not_gated(contract: tuple[Server, str, str]) -> None:
    """Without an attachment there is no retrieval to judge: the chat model answers as usual."""
    server, token, _ = contract
    chats_before = server.double.chat_requests()
    reply = call("POST", server.url + "/api/chat/completions", {
        "model": "ragfr-extractive-test-double:latest", "stream": False,
        "messages": [{"role": "user", "content": OFF_DOMAIN}]}, token)
    assert not answer_text(reply).startswith(REFUSAL)
    assert server.double.chat_requests() == chats_before + 1


def test_settings_file_turns_query_generation_off() -> None:
    from .stack import settings_file

    settings = settings_file()
    assert settings["ENABLE_RETRIEVAL_QUERY_GENERATION"] == "false"
    assert settings["ENABLE_PERSISTENT_CONFIG"] == "false"


