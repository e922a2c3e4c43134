"""Passwords never reach a message or a log: URL userinfo, a URL's password parameter, keyword DSNs."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from ragfr.db.connect import redact

HOSTILE = "p@ss/w?o#r%d ' x"


@pytest.mark.parametrize("dsn", [
    f"postgresql://ragfr:{quote(HOSTILE, safe='')}@db:5432/ragfr",
    f"postgresql://ragfr@db/ragfr?password={quote(HOSTILE, safe='')}&sslmode=require",
    "host=db user=ragfr password='p@ss/w?o#r%d \\' x' dbname=ragfr",
    "host=db password=plain dbname=ragfr",
])
def test_password_is_masked(dsn: str) -> None:
    shown = redact(dsn)
    assert "***" in shown
    for secret in ("p@ss", "w?o", "plain", quote(HOSTILE, safe="")):
        assert secret not in shown
    assert "db" in shown  # the server is still named


def test_dsn_without_password_is_unchanged() -> None:
    assert redact("postgresql://ragfr@db/ragfr") == "postgresql://ragfr@db/ragfr"
    assert redact("host=db dbname=ragfr") == "host=db dbname=ragfr"


def test_unparseable_dsn_reveals_nothing() -> None:
    assert redact("host='unterminated password=secret") == "<unparseable DSN>"


def test_url_with_an_unescaped_password_reveals_none_of_it() -> None:
    # A password pasted into a URL without percent-encoding (what the chart once rendered): the URL parser
    # cuts the userinfo at the password's own `/` or `@`, so only part of it would be masked.
    shown = redact(f"postgresql://ragfr:{HOSTILE}@db:5432/ragfr?sslmode=disable")
    assert "***" in shown
    for piece in ("p@ss", "ss/w", "w?o", "r%d", "' x"):
        assert piece not in shown, shown
