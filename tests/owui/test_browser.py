"""A real browser, as an analyst: Debian's chromium driven by Playwright against the patched Open WebUI 0.12.4.

Sign-up (the first account), a knowledge base "Contrats" created in the Workspace, the contract uploaded
through the page's file chooser, then two new chats, each attaching the knowledge base by typing `#Contrats`:
  - "Dans quel délai dois-je déclarer un vol ?" -> the theft sentence with its citation chip, one chat request;
  - "Quelle est la capitale du Pérou ?"           -> the gate's French refusal with the closest passages and
                                                    their file names, zero chat requests.
Screenshots: .state/browser/answered.png and .state/browser/refused.png (look at them).

The browser is the system one (/usr/bin/chromium, apt package `chromium`); Playwright never downloads one.
Open WebUI keeps a websocket open, so pages are awaited on `load` and on visible text, never `networkidle`.
Server settings: those of `make up` (tests/owui/stack.py); this module starts its own server because sign-up
must be the first account.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from tests.support.paths import REPO

from ragfr.owui.chat_gate import CLOSEST, REFUSAL
from ragfr_tools.fixtures import ANSWERABLE, FILENAME, OFF_DOMAIN, THEFT_SENTENCE
from ragfr_tools.fixtures import CONTRACT as DOCUMENT

from .conftest import running_stack
from .stack import Server

pytestmark = [pytest.mark.owui, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
SHOTS = REPO / ".state" / "browser"
TIMEOUT_MS = 90_000
PROCESSED = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB)\b")  # a file row's size: shown once processing is done


@pytest.fixture(scope="module")
def server(
    owui_site_packages: Path, patched_tree: Path, pg_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    with running_stack(owui_site_packages, patched_tree, pg_dsn, tmp_path_factory.mktemp("owui-browser")) as s:
        yield s


@pytest.fixture(scope="module")
def page(server: Server, request: pytest.FixtureRequest) -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: scripts/setup-apt.sh installs Debian's chromium (make setup)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1280, "height": 900})
            pg.set_default_timeout(TIMEOUT_MS)
            yield pg
            if request.session.testsfailed:  # what the browser showed when it failed, for the developer
                SHOTS.mkdir(parents=True, exist_ok=True)
                pg.screenshot(path=str(SHOTS / "failure.png"), full_page=True)
                print(f"browser at {pg.url}; screenshot {SHOTS / 'failure.png'}")
        finally:
            browser.close()


def sign_up(pg: Any, url: str) -> None:
    pg.goto(url, wait_until="load")
    # A first visit shows a welcome screen with "Get started", then the sign-up form.
    start, name = pg.get_by_role("button", name="Get started"), pg.locator("#name")
    start.or_(name).first.wait_for()
    if start.is_visible():
        start.click()
    pg.fill("#name", "Analyste")
    pg.fill("#email", "analyste@example.org")
    pg.fill("#password", "ragfr-browser-Passw0rd!")
    pg.keyboard.press("Enter")
    pg.wait_for_url(url + "/", wait_until="load")
    pg.get_by_role("button", name="Okay, Let's Go!").click()  # the "What's New" dialog of a first visit


def create_knowledge_base(pg: Any, url: str, document: Path) -> None:
    pg.goto(url + "/workspace/knowledge", wait_until="load")
    pg.get_by_role("button", name="Create", exact=True).click()
    pg.get_by_placeholder("Name your knowledge base").fill("Contrats")
    pg.get_by_placeholder("Describe your knowledge base").fill("Contrats d'assurance habitation")
    pg.get_by_role("button", name="Create Knowledge").click()
    pg.wait_for_url(url + "/workspace/knowledge/*", wait_until="load")
    pg.locator("main button").last.click()  # the collection's "+" menu
    with pg.expect_file_chooser() as chooser:
        pg.get_by_role("button", name="Upload files").click()
    chooser.value.set_files(str(document))
    # What the analyst waits for: the file's row no longer says "Uploading" or "Processing" but shows its
    # size (Open WebUI's EntryRow), i.e. its chunks are stored. Asking before that is refused: no passage.
    row = pg.locator("button", has_text=document.name)
    row.filter(has_text=PROCESSED).or_(row.filter(has_text="Failed")).first.wait_for()
    assert not row.filter(has_text="Failed").count(), "Open WebUI could not process the upload"


def ask_with_knowledge(pg: Any, url: str, question: str) -> None:
    pg.goto(url + "/", wait_until="load")
    box = pg.locator("#chat-input")
    box.click()
    pg.keyboard.type("#Contrats")
    suggestion = pg.get_by_role("button", name="Contrats", exact=True)
    suggestion.click()  # the `#` suggestion: attach it
    # The menu closes and takes the `#Contrats` text with it; keys typed meanwhile can be lost (seen on a
    # busy machine: « s quel délai ... »). Wait until the input is empty, then type, and send only once the
    # input shows the whole question, as an analyst would check before pressing Enter.
    pg.wait_for_function("sel => document.querySelector(sel).innerText.trim() === ''", arg="#chat-input")
    for _ in range(3):
        box.click()
        pg.keyboard.press("Control+A")
        pg.keyboard.press("Backspace")
        pg.keyboard.type(question)
        try:
            pg.wait_for_function("([sel, q]) => document.querySelector(sel).innerText.trim() === q",
                                 arg=["#chat-input", question], timeout=10_000)
            break
        except PlaywrightTimeout:
            continue
    else:
        raise AssertionError(f"the chat input never showed {question!r}: {box.inner_text()!r}")
    pg.keyboard.press("Enter")


def test_analyst_in_chromium_gets_a_cited_answer_and_a_refusal(server: Server, page: Any, tmp_path: Path) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    document = tmp_path / FILENAME
    document.write_text(DOCUMENT, encoding="utf-8")
    sign_up(page, server.url)
    create_knowledge_base(page, server.url, document)

    before = server.double.chat_requests()
    ask_with_knowledge(page, server.url, ANSWERABLE)
    page.get_by_text(THEFT_SENTENCE).first.wait_for()
    # The [1] of the reply is rendered as a citation chip naming the file.
    page.locator("button", has_text=FILENAME).first.wait_for()
    page.screenshot(path=str(SHOTS / "answered.png"), full_page=True)
    assert server.double.chat_requests() - before == 1

    before = server.double.chat_requests()
    ask_with_knowledge(page, server.url, OFF_DOMAIN)
    page.get_by_text(REFUSAL).first.wait_for()
    page.get_by_text(CLOSEST).first.wait_for()
    page.get_by_text(FILENAME).first.wait_for()
    page.screenshot(path=str(SHOTS / "refused.png"), full_page=True)
    assert server.double.chat_requests() - before == 0
    assert server.log_events("gate")[-1]["decision"] == "refuse"
