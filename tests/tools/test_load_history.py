"""`make load`'s repeat check compares only replies that judged the passages: a busy reply (the search did not
run) is neither the first answer of a question nor a repeat that differs from it."""

from __future__ import annotations

from ragfr_tools.load.drive import History, Outcome


def outcome(kind: str, *chunks: str) -> Outcome:
    return Outcome(kind, "", (kind, *chunks) if kind in ("answered", "refused") else (kind,), 0.1)


def test_busy_replies_are_not_compared_and_do_not_set_the_first_answer() -> None:
    history = History()
    assert history.compare("q", outcome("busy")) is None
    assert history.compare("q", outcome("answered", "c1", "c2")) is None  # the first judged ask
    assert history.compare("q", outcome("busy")) is None
    assert history.compare("q", outcome("answered", "c1", "c2")) is True
    assert history.compare("q", outcome("answered", "c2", "c1")) is False
    assert history.compare("q", outcome("refused", "c1")) is False
