"""Named kill points, so tests can prove that a `kill -9` at any step resumes with nothing redone or skipped.

`RAGFR_EMBMIGRATE_KILL_AT=NAME` (or `NAME:N`, the N-th time NAME is reached) makes the process SIGKILL
itself there: no cleanup handler, no `finally`, exactly like the OOM killer or a node loss. Unset, each
call is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter

ENV = "RAGFR_EMBMIGRATE_KILL_AT"
_seen: Counter[str] = Counter()


def _target() -> tuple[str, int] | None:
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return None
    name, _, nth = raw.partition(":")
    return name, int(nth) if nth else 1


def kill_point(name: str) -> None:
    """SIGKILL this process if the environment names this point (and this is its N-th visit)."""
    target = _target()
    if target is None or target[0] != name:
        return
    _seen[name] += 1
    if _seen[name] >= target[1]:
        os.kill(os.getpid(), signal.SIGKILL)


def kill_during(name: str, delay_s: float = 1.0) -> threading.Timer | None:
    """For a blocking server call (CREATE INDEX CONCURRENTLY): SIGKILL after `delay_s` while it runs.

    Returns the started timer (cancel it when the call returns) or None when the point is not armed.
    """
    target = _target()
    if target is None or target[0] != name:
        return None
    timer = threading.Timer(delay_s, os.kill, args=(os.getpid(), signal.SIGKILL))
    timer.daemon = True
    timer.start()
    return timer
