"""Stopping a long command at its next safe point on SIGINT, SIGTERM or SIGHUP.

Every committed batch is kept whatever happens (see backfill), so stopping is always safe; what matters
to the operator is to be told that the signal was seen, when the process will stop, and what was kept.
The first signal only sets a flag (checked after each committed batch and between steps); a second one
stops at once, losing at most the uncommitted batch in flight.

Handlers are installed explicitly: a shell starts background jobs (`cmd &`, `nohup cmd &`) with SIGINT
ignored, and Python then never raises KeyboardInterrupt, so without them only SIGTERM (exit 143, no
word) would stop such a run. SIGHUP stays ignored when it was at startup: that is what `nohup` asks for.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from ragfr.errors import RagfrError

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_requested: list[int] = []


class Stopped(RagfrError):
    """Stopped on request at a safe point; the message says what was kept and how to go on."""

    label = "stopped"

    def __init__(self, signum: int, message: str = "") -> None:
        super().__init__(message or f"{signal.Signals(signum).name} received")
        self.signum = signum
        self.exit_code = 128 + signum  # what a shell reports for a process the signal ended

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name


def _write(text: str) -> None:
    # os.write, not print: a handler may run while the main code is inside a buffered write to stderr.
    try:
        os.write(2, text.encode())
    except OSError:
        pass  # the terminal is gone (SIGHUP): stopping matters more than saying so


def _handler(signum: int, _frame: FrameType | None) -> None:
    name = signal.Signals(signum).name
    if _requested:
        _write(f"ragfr: {name} again: stopping now (the uncommitted batch in flight is discarded)\n")
        raise KeyboardInterrupt
    _requested.append(signum)
    _write(f"ragfr: {name} received: stopping at the next safe point (after the batch or step in progress); "
           "everything committed is kept. Send it again to stop at once.\n")


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Route SIGINT/SIGTERM/SIGHUP to the stop flag for the duration of the block (main thread only)."""
    _requested.clear()
    previous = {}
    for sig in _SIGNALS:
        current = signal.getsignal(sig)
        if sig == signal.SIGHUP and current == signal.SIG_IGN:
            continue
        previous[sig] = current
        signal.signal(sig, _handler)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _requested.clear()


def requested() -> int | None:
    return _requested[0] if _requested else None


def checkpoint(message: str = "") -> None:
    """Raise Stopped if a stop was requested: call only where everything done so far is committed."""
    if _requested:
        raise Stopped(_requested[0], message)
