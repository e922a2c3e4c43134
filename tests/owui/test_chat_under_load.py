"""A team at once, through the REAL patched Open WebUI 0.12.4 with the settings of `make up`: eight analysts
chatting together stay on ragfr's path and get the same answers, and every way the search can fail is an
honest message with no model call, never Open WebUI's legacy path (`Starting hybrid search` in its log).

The team: 24 PIAF paragraphs (../shared/datasets, one document each) in one knowledge base, 8 analysts
asking from a pool of 12 questions written on them for 30 s (`ragfr_tools.load`, the harness of `make load`,
short). No timing is asserted (the machine may be busy): no error, no legacy search, no search that could
not run, every repeated question with the sources and decision of its first ask, one query embedding per
chat and no passage embedded again (Open WebUI's re-scoring without a reranker embedded k per chat).

The failures are forced with the product's own settings (RAGFR_OWUI_* defaults of openwebui-env.yaml and
chat_search.Limits): the test double's query faults (an HTTP 500; a delay past the 20 s embedding timeout;
a delay that fills the 2 query-embedding slots, so a third question waits its 5 s and is told busy), a
table renamed under the search (an error) and a table locked past the 10 s statement timeout (busy), a
question over 8,000 characters and one with a NUL (refused). A reranker's error cannot be forced here (no
cross-encoder weights offline): tests/owui/test_chat_search.py drives that branch.
"""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from ragfr.owui.runtime.chat_gate import UNAVAILABLE, unavailable_message
from ragfr_tools.load.corpus import team_corpus
from ragfr_tools.load.drive import JUDGED, LEGACY_LINE, History, Probes, run_level
from ragfr_tools.repo import PIAF_JSON

from .stack import CHAT_MODEL, Server, answer_text, ask, call, knowledge_base

pytestmark = [pytest.mark.owui, pytest.mark.slow]


@pytest.fixture(scope="module")
def team_kb(owui_server: Server, admin_token: str) -> tuple[Server, str, str, list[str]]:
    corpus = team_corpus(PIAF_JSON, documents=24, questions=12, seed=7)
    kb = knowledge_base(owui_server, admin_token, "Equipe", corpus.documents)
    return owui_server, admin_token, kb, [q for q, _ in corpus.questions]


def legacy(server: Server) -> int:
    return server.log.read_text(encoding="utf-8", errors="replace").count(LEGACY_LINE)


def test_eight_analysts_at_once_stay_on_ragfrs_path_and_get_the_same_answers(
        team_kb: tuple[Server, str, str, list[str]]) -> None:
    server, token, kb, pool = team_kb
    report = run_level(server.url, token, CHAT_MODEL, kb, pool, analysts=8, seconds=30, history=History(),
                       probes=Probes(server.double.url, server.log))
    print(report)
    # Judged: a reply that read the passages, answered, answered with the gate's caution (issue 38) or refused.
    judged = sum(report["outcomes"].get(kind, 0) for kind in JUDGED)
    assert judged >= 16, f"too few judged chats to say anything about repeats: {report['outcomes']}"
    assert report["errors"] == {} and report["legacy_searches"] == 0
    # On a machine busy with other work a question may wait past the search slots: the reply then says
    # "busy" (its own message, no model call), which is the product's answer to overload, not a failure.
    # Nothing else may come back, and every judged repeat must match the first judged ask.
    assert set(report["outcomes"]) <= {*JUDGED, "busy"}, report["outcomes"]
    assert set(report["unavailable"]) <= {"search busy"}, report["unavailable"]
    assert report["outcomes"].get("answered", 0) > 0
    assert report["repeats"] > 0 and report["repeats_identical"] == report["repeats"]
    # One query embedding per judged question, none twice (a busy reply may come before or after its own).
    embedded = round(report["embedded_queries_per_chat"] * report["chats"])
    assert judged <= embedded <= report["chats"], (judged, embedded, report["chats"])
    assert report["embedded_passages_per_chat"] == 0.0, "no passage embedded again to re-score"


def _faults(server: Server, **faults: float) -> None:
    call("POST", server.double.url + "/ragfr/faults", faults)


@pytest.fixture
def double_faults(team_kb: tuple[Server, str, str, list[str]]) -> Iterator[Server]:
    server = team_kb[0]
    yield server
    _faults(server)
    # A delayed embedding may still hold the double's lock: one more embedding waits until it is free.
    req = urllib.request.Request(server.double.url + "/api/embed", method="POST", headers={
        "Content-Type": "application/json"}, data=b'{"model": "multilingual-e5-small-test-double", "input": "x"}')
    with urllib.request.urlopen(req, timeout=120):
        pass


def _unavailable(server: Server, kind: str) -> float:
    return server.metric("ragfr_chat_search_unavailable_total", kind=kind)


def _expect(server: Server, reply: dict[str, Any], kind: str, reason: str) -> None:
    """The analyst reads the kind's message and an incident id; the gate log's line with that id holds the
    reason, which the reply does not."""
    gate = server.log_events("gate")[-1]
    assert gate["decision"] == "refuse" and gate["reason"].startswith(f"search {kind}") and reason in gate["reason"]
    assert answer_text(reply) == unavailable_message(kind, gate["incident"]), answer_text(reply)
    assert reason not in answer_text(reply)


def _one(server: Server, token: str, kb: str, question: str, kind: str, reason: str) -> None:
    before = (legacy(server), server.double.chat_requests(), _unavailable(server, kind))
    reply = ask(server, token, question, kb)
    _expect(server, reply, kind, reason)
    assert (legacy(server), server.double.chat_requests(), _unavailable(server, kind)) == (
        before[0], before[1], before[2] + 1), "no legacy search, no model call, counted"


def test_a_failing_query_embedding_is_a_failure_message(team_kb: tuple[Server, str, str, list[str]],
                                                        double_faults: Server) -> None:
    server, token, kb, pool = team_kb
    _faults(server, query_status=500)
    _one(server, token, kb, pool[0], "failed", "query embedding")


def test_a_query_embedding_past_its_timeout_is_busy(team_kb: tuple[Server, str, str, list[str]],
                                                    double_faults: Server) -> None:
    server, token, kb, pool = team_kb
    _faults(server, query_delay_s=21)  # RAGFR_OWUI_EMBED_TIMEOUT_S is 20 s by default
    _one(server, token, kb, pool[1], "busy", "the query embedding took longer than 20 s")


def test_past_the_embedding_slots_the_next_question_is_told_busy(team_kb: tuple[Server, str, str, list[str]],
                                                                double_faults: Server) -> None:
    server, token, kb, pool = team_kb
    _faults(server, query_delay_s=7)  # two slots taken for 7 and 14 s; the third waits its 5 s
    before = (legacy(server), server.double.chat_requests())
    replies: list[dict[str, Any]] = []
    lock = threading.Lock()

    def analyst(question: str) -> None:
        reply = ask(server, token, question, kb)
        with lock:
            replies.append(reply)

    threads = [threading.Thread(target=analyst, args=(q,)) for q in pool[2:5]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    texts = [answer_text(r) for r in replies]
    assert len(texts) == 3 and sum(t.startswith(UNAVAILABLE["busy"]) for t in texts) == 1, texts
    assert legacy(server) == before[0]
    assert server.double.chat_requests() - before[1] <= 2, "the busy question called no model"


def test_an_error_inside_ragfrs_search_is_a_failure_message(team_kb: tuple[Server, str, str, list[str]]) -> None:
    server, token, kb, pool = team_kb
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("ALTER TABLE ragfr_collection_stats RENAME TO ragfr_collection_stats_away")
        try:
            _one(server, token, kb, pool[5], "failed", "ragfr_collection_stats")
        finally:
            conn.execute("ALTER TABLE ragfr_collection_stats_away RENAME TO ragfr_collection_stats")


def test_a_search_stuck_past_the_statement_timeout_is_busy(team_kb: tuple[Server, str, str, list[str]]) -> None:
    server, token, kb, pool = team_kb
    with psycopg.connect(server.dsn) as blocker:
        blocker.execute("LOCK TABLE document_chunk IN ACCESS EXCLUSIVE MODE")  # e.g. a migration gone wrong
        _one(server, token, kb, pool[6], "busy", "statement_timeout")


@pytest.mark.parametrize(("question", "reason"), [("assurance " * 900, "the limit is 8000"),
                                                  ("Quel délai\x00?", "NUL")], ids=["too-long", "nul"])
def test_a_question_ragfr_will_not_search_is_refused_as_such(team_kb: tuple[Server, str, str, list[str]],
                                                            question: str, reason: str) -> None:
    server, token, kb, _ = team_kb
    _one(server, token, kb, question, "refused", reason)
