"""Passwords never reach a message or a log: URL userinfo, a URL's password parameter, keyword DSNs."""

from __future__ import annotations

import random
import string
from urllib.parse import quote

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

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


# Every printable ASCII character (URL delimiters # / ? @ : & % +, quotes, backslash, space, '*'), tab and
# line breaks, non-ASCII letters; NUL is the one character libpq cannot take.
_ALPHABET = string.printable + "éßø€字\u00a0"
_DELIMITERS = "#/?@:&%' \\=*+[]"


def _passwords(n: int = 400) -> list[str]:
    rng = random.Random(25)
    out = [c * 3 for c in _DELIMITERS] + ["://", "a://b", "x@y#z/w?v", "p#ss", "p/ss", "p?ss"]
    while len(out) < n:
        pw = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 24)))
        out.append(pw + rng.choice(_DELIMITERS))  # at least one delimiter somewhere
    return out


PASSWORDS = _passwords()
URL_MASKED = "postgresql://ragfr:***@dbhost:5432/ragfr?sslmode=require"
QUERY_MASKED = "postgresql://ragfr@dbhost:5432/ragfr?sslmode=require&password=***"
KEYWORDS_MASKED = {"host": "dbhost", "user": "ragfr", "password": "***", "dbname": "ragfr"}


def _forms(pw: str) -> list[tuple[str, str | dict[str, str]]]:
    enc = quote(pw, safe="")
    return [
        (f"postgresql://ragfr:{pw}@dbhost:5432/ragfr?sslmode=require", URL_MASKED),  # pasted raw
        (f"postgresql://ragfr:{enc}@dbhost:5432/ragfr?sslmode=require", URL_MASKED),
        (f"postgresql://ragfr@dbhost:5432/ragfr?sslmode=require&password={pw}", QUERY_MASKED),
        (f"postgresql://ragfr@dbhost:5432/ragfr?sslmode=require&password={enc}", QUERY_MASKED),
        (make_conninfo("", host="dbhost", user="ragfr", password=pw, dbname="ragfr"), KEYWORDS_MASKED),
    ]


def test_any_password_character_is_masked_in_every_form() -> None:
    """A generated set of passwords (fixed seed), each in a URL raw and percent-encoded, in a URL's query raw
    and encoded, and in a keyword DSN: the redacted text is exactly the DSN with *** for the password. Before,
    postgresql://u:p#ss@h/db (and any unescaped / or ?) came back whole, as did a keyword DSN whose quoted
    password held "://"."""
    wrong = []
    for pw in PASSWORDS:
        for dsn, expected in _forms(pw):
            shown = redact(dsn)
            if isinstance(expected, dict):  # keyword DSNs: libpq's parameters, in any order
                if conninfo_to_dict(shown) != expected or (pw.strip("*") and pw in shown):
                    wrong.append((pw, dsn, shown))
            elif shown != expected:
                wrong.append((pw, dsn, shown))
    assert not wrong, f"{len(wrong)} wrong, e.g. {wrong[:5]}"


def test_the_finding_from_issue_25() -> None:
    assert redact("postgresql://u:p#ss@h/db") == "postgresql://u:***@h/db"
    assert redact("postgresql://u:p/ss@h/db") == "postgresql://u:***@h/db"
    assert redact("postgresql://u:p?ss@h/db") == "postgresql://u:***@h/db"
    assert conninfo_to_dict(redact("host=h password='a://b' dbname=db")) == {
        "host": "h", "password": "***", "dbname": "db"}
