"""Issue 48 item 7, in a real browser: an analyst the admin adds (not the first account) works on day one.

The admin is the first account (its sign-up, then Admin Panel > Users > Add User, as the API calls them:
POST /api/v1/auths/add with role `user`); everything after is the analyst's, in Debian's chromium driven by
Playwright (tests/owui/browser.py): sign-in, a knowledge base "Sinistres" created in the Workspace, the
contract uploaded through the page's file chooser, then a new chat attaching it with `#Sinistres`: the theft
sentence and its citation chip, one chat request. On stock settings the analyst has no model to chat with and
the Workspace refuses the knowledge base (issue 48). Screenshot: .state/browser/analyst-answered.png.
Server settings: those of `make up` (tests/owui/stack.py); its own server, as the admin must be the first account.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragfr_tools.fixtures import ANSWERABLE, FILENAME, THEFT_SENTENCE
from ragfr_tools.fixtures import CONTRACT as DOCUMENT

from .browser import SHOTS, ask_with_knowledge, chromium_page, create_knowledge_base, sign_in
from .conftest import running_stack
from .stack import Server, add_analyst, sign_up_admin

pytestmark = [pytest.mark.owui, pytest.mark.slow]

PASSWORD = "ragfr-analyste-Passw0rd!"


@pytest.fixture(scope="module")
def server(
    owui_site_packages: Path, patched_tree: Path, pg_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    with running_stack(owui_site_packages, patched_tree, pg_dsn, tmp_path_factory.mktemp("owui-analyst")) as s:
        yield s


@pytest.fixture(scope="module")
def page(server: Server, request: pytest.FixtureRequest) -> Iterator[Any]:
    with chromium_page(request, failure_shot="analyst-failure.png") as pg:
        yield pg


def test_an_analyst_the_admin_added_builds_a_knowledge_base_and_gets_an_answer(
        server: Server, page: Any, tmp_path: Path) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    admin = sign_up_admin(server)
    email = f"analyste-{uuid.uuid4().hex[:8]}@example.org"
    add_analyst(server, admin, "Analyste", email, PASSWORD)
    document = tmp_path / FILENAME
    document.write_text(DOCUMENT, encoding="utf-8")

    sign_in(page, server.url, email, PASSWORD)
    create_knowledge_base(page, server.url, document, name="Sinistres")

    before = server.double.chat_requests()
    ask_with_knowledge(page, server.url, ANSWERABLE, name="Sinistres")
    page.get_by_text(THEFT_SENTENCE).first.wait_for()
    page.locator("button", has_text=FILENAME).first.wait_for()  # the citation chip naming the file
    page.screenshot(path=str(SHOTS / "analyst-answered.png"), full_page=True)
    assert server.double.chat_requests() - before == 1
