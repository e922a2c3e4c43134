"""A real browser, as an analyst: Debian's chromium driven by Playwright against the patched Open WebUI 0.12.4.

Sign-up (the first account), a knowledge base "Contrats" created in the Workspace, the contract uploaded
through the page's file chooser, then two new chats, each attaching the knowledge base by typing `#Contrats`:
  - "Dans quel délai dois-je déclarer un vol ?" -> the theft sentence with its citation chip, one chat request;
                                                    the chip opens Open WebUI's citation modal, whose relevance
                                                    beside each passage is ragfr's (ragfr.gate.relevance: the
                                                    gate's p for the top passage), the theft passage's far from
                                                    single digits (it read « 3.28 % » when it was the RRF score);
  - "Quelle est la capitale du Pérou ?"           -> the gate's French refusal, then why (« Aucun des documents
                                                    joints ne mentionne « capitale du Pérou ». »), the closest
                                                    passages and their file names, zero chat requests;
  - "Le vol de mes bijoux dans ma voiture est-il couvert ?"
                                                  -> the jewels' article, but no passage names a car: the
                                                    shipped e5 gate alone answers it, the subject rule
                                                    (ragfr.gate.subject) makes it a caution, so the model is
                                                    called once and the analyst reads the French caution line
                                                    and why (« ... ne mentionne « voiture ». ») above the
                                                    reply without a click, and again in the caution chip's
                                                    modal. (The caution question was « termites » until the
                                                    subject rule: « termites » is in no passage, so its
                                                    caution is now a refusal naming them: tests/owui/test_e2e.py.)
Screenshots: .state/browser/answered.png, refused.png, caution-line.png and caution.png (look at them).

The browser and the journey's steps: tests/owui/browser.py (the system chromium; pages awaited on `load` and
visible text, never `networkidle`, as Open WebUI keeps a websocket open).
Server settings: those of `make up` (tests/owui/stack.py); this module starts its own server because sign-up
must be the first account.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragfr_tools.fixtures import ANSWERABLE, FILENAME, OFF_DOMAIN, THEFT_SENTENCE, UNSURE, UNSURE_REASON
from ragfr_tools.fixtures import CONTRACT as DOCUMENT

from .browser import SHOTS, ask_with_knowledge, chromium_page, create_knowledge_base, see_caution, see_refusal, sign_up
from .conftest import running_stack
from .stack import Server

pytestmark = [pytest.mark.owui, pytest.mark.slow]

PERCENT = re.compile(r"(\d+\.\d\d)%")  # CitationModal's relevance: `{percentage.toFixed(2)}%`


def shown_percent(p: float) -> float:
    """What CitationModal shows for a relevance p in [0, 1]: Math.round(p * 10000) / 100 (half up)."""
    return math.floor(p * 10000 + 0.5) / 100


def read_relevance(page: Any, chip: Any, gate: dict[str, Any]) -> float:
    """Opens the answer's citation chip as the analyst does and returns the relevance shown beside the theft
    passage, after checking every percentage of the modal against the gate log's passages (same order)."""
    chip.click()
    modal = page.get_by_role("dialog").filter(has_text=PERCENT)
    modal.wait_for()
    text = " ".join(modal.inner_text().split())
    page.screenshot(path=str(SHOTS / "answered-citation.png"), full_page=True)
    print("citation modal:", text, "gate:", gate)
    shown = [float(m) for m in PERCENT.findall(text)]
    assert shown == [shown_percent(p["relevance"]) for p in gate["passages"]], (shown, gate["passages"], text)
    # The percentage is printed above its passage: the theft passage's is the last one before its text.
    before = text[:text.index(" ".join(THEFT_SENTENCE.split()))]
    right = float(PERCENT.findall(before)[-1])
    modal.get_by_role("button", name="Close citation modal").click()
    modal.wait_for(state="hidden")
    return right


@pytest.fixture(scope="module")
def server(
    owui_site_packages: Path, patched_tree: Path, pg_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    with running_stack(owui_site_packages, patched_tree, pg_dsn, tmp_path_factory.mktemp("owui-browser")) as s:
        yield s


@pytest.fixture(scope="module")
def page(server: Server, request: pytest.FixtureRequest) -> Iterator[Any]:
    with chromium_page(request) as pg:
        yield pg


def test_analyst_in_chromium_gets_a_cited_answer_a_refusal_and_a_caution(server: Server, page: Any, tmp_path: Path) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    document = tmp_path / FILENAME
    document.write_text(DOCUMENT, encoding="utf-8")
    sign_up(page, server.url)
    create_knowledge_base(page, server.url, document)

    before = server.double.chat_requests()
    ask_with_knowledge(page, server.url, ANSWERABLE)
    page.get_by_text(THEFT_SENTENCE).first.wait_for()
    # The [1] of the reply is rendered as a citation chip naming the file.
    chip = page.locator("button", has_text=FILENAME).first
    chip.wait_for()
    page.screenshot(path=str(SHOTS / "answered.png"), full_page=True)
    assert server.double.chat_requests() - before == 1
    gate = server.log_events("gate")[-1]
    assert gate["decision"] == "answer" and gate["rule"] == "evidence", gate
    # The best passage reads the gate's p (the search's evidence); the theft passage is not single-digit.
    assert gate["passages"][0]["relevance"] == pytest.approx(gate["probability"]), gate
    right = read_relevance(page, chip, gate)
    assert right >= 10.0, (right, gate)

    before = server.double.chat_requests()
    see_refusal(page, server.url, OFF_DOMAIN, FILENAME, SHOTS / "refused.png",
                reason="Aucun des documents joints ne mentionne « capitale du Pérou ».")
    assert server.double.chat_requests() - before == 0
    assert server.log_events("gate")[-1]["decision"] == "refuse"

    before = server.double.chat_requests()
    see_caution(page, server.url, UNSURE, SHOTS / "caution.png", reason=UNSURE_REASON)
    assert server.double.chat_requests() - before == 1
    gate = server.log_events("gate")[-1]
    assert gate["decision"] == "caution" and gate["rule"] == "evidence", gate
    assert (gate["subject_changed"], gate["reason_fr"]) == ("answer -> caution", UNSURE_REASON), gate
