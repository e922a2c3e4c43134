"""The analyst's browser for the owui tests: Debian's chromium (/usr/bin/chromium, apt package `chromium`)
driven by Playwright, which never downloads one; and the steps of the analyst's journey in Open WebUI 0.12.4.

Open WebUI keeps a websocket open, so pages are awaited on `load` and on visible text, never `networkidle`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from tests.support.paths import REPO

from ragfr.owui.runtime.chat_gate import CAUTION_LINE, CAUTION_SOURCE, CLOSEST, REFUSAL, caution_line

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
SHOTS = REPO / ".state" / "browser"
TIMEOUT_MS = 90_000
PROCESSED = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB)\b")  # a file row's size: shown once processing is done


@contextmanager
def chromium_page(request: pytest.FixtureRequest, failure_shot: str = "failure.png") -> Iterator[Any]:
    """One page of a fresh headless chromium; a full-page screenshot in SHOTS if any test of the session failed."""
    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: scripts/setup-apt.sh installs Debian's chromium (make setup)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1280, "height": 900})
            # The chart and `make up` default the interface to French (DEFAULT_LOCALE fr-FR, issue 36); this
            # analyst has picked English in Open WebUI's settings (its saved choice, localStorage.locale, wins
            # over the server's default), because the selectors below are Open WebUI's English labels. The
            # server runs the product's setting; a French walk of the same journey is still to be written.
            pg.add_init_script("window.localStorage.setItem('locale', 'en-US')")
            pg.set_default_timeout(TIMEOUT_MS)
            yield pg
            if request.session.testsfailed:  # what the browser showed when it failed, for the developer
                SHOTS.mkdir(parents=True, exist_ok=True)
                pg.screenshot(path=str(SHOTS / failure_shot), full_page=True)
                print(f"browser at {pg.url}; screenshot {SHOTS / failure_shot}")
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


def sign_in(pg: Any, url: str, email: str, password: str) -> None:
    """An account the admin added signs in (sign-up is closed: the page shows the sign-in form)."""
    pg.goto(url, wait_until="load")
    pg.locator("#email").fill(email)
    pg.locator("#password").fill(password)
    pg.keyboard.press("Enter")
    pg.wait_for_url(url + "/", wait_until="load")
    pg.locator("#chat-input").wait_for()
    # Open WebUI 0.12.4 shows the "What's New" dialog to the admin's first visit (sign_up), not to an analyst's.
    welcome = pg.get_by_role("button", name="Okay, Let's Go!")
    if welcome.is_visible():
        welcome.click()


def create_knowledge_base(pg: Any, url: str, document: Path, name: str = "Contrats") -> None:
    pg.goto(url + "/workspace/knowledge", wait_until="load")
    pg.get_by_role("button", name="Create", exact=True).click()
    pg.get_by_placeholder("Name your knowledge base").fill(name)
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


def ask_with_knowledge(pg: Any, url: str, question: str, name: str = "Contrats") -> None:
    pg.goto(url + "/", wait_until="load")
    box = pg.locator("#chat-input")
    box.click()
    pg.keyboard.type(f"#{name}")
    suggestion = pg.get_by_role("button", name=name, exact=True)
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


def see_refusal(pg: Any, url: str, question: str, filename: str, shot: Path, reason: str | None = None) -> None:
    """Asks `question` with the knowledge base and waits for the gate's refusal as the analyst sees it: the
    French refusal (followed by `reason`, the subject no document names, when given), the closest passages'
    heading and the file they come from; then a screenshot."""
    ask_with_knowledge(pg, url, question)
    pg.get_by_text(REFUSAL).first.wait_for()
    if reason:
        pg.get_by_text(f"{REFUSAL} {reason}").first.wait_for()
    pg.get_by_text(CLOSEST).first.wait_for()
    pg.get_by_text(filename).first.wait_for()
    pg.screenshot(path=str(shot), full_page=True)


def see_caution(pg: Any, url: str, question: str, shot: Path, reason: str | None = None) -> None:
    """Asks `question` with the knowledge base and finds the gate's caution as the analyst does: first without a
    click, the French caution line above the reply (`reason` in its place, the subject no document names, when
    given, shown whole; a screenshot of it), still there when the chat is loaded again; then under the reply, the "N Sources"
    button opens the list of sources, where the caution is a source of its own whose modal holds the line and
    the model's instruction; a screenshot with the modal open."""
    ask_with_knowledge(pg, url, question)
    line = pg.locator(".status-description", has_text=caution_line(reason)).last
    line.wait_for()
    # Open WebUI clamps the status to one line: the subject must be on screen, not behind an ellipsis.
    assert line.evaluate("e => e.scrollWidth <= e.clientWidth"), line.inner_text()
    pg.screenshot(path=str(shot.with_name(shot.stem + "-line.png")), full_page=True)
    # Kept with the chat: the same page loaded again (as tomorrow, from the chat list) still shows it.
    pg.reload(wait_until="load")
    line.wait_for()
    pg.locator("button", has_text=re.compile(r"^\s*\d+ Sources?\s*$")).last.click()
    chip = pg.locator("button", has_text=CAUTION_SOURCE).first
    chip.wait_for()
    chip.click()
    modal = pg.get_by_role("dialog").filter(has_text=f"{CAUTION_LINE} {reason}" if reason else CAUTION_LINE)
    modal.wait_for()
    pg.screenshot(path=str(shot), full_page=True)
    modal.get_by_role("button", name="Close citation modal").click()
    modal.wait_for(state="hidden")
