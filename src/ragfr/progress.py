"""Progress of long commands (ingest, eval, embedding migration): a bar on a terminal, one plain line every
N items anywhere else.

A log file, `nohup`, a pipe or a Kubernetes Job's log gets lines it can keep (a bar's carriage returns
would pile up there), and a pseudo-terminal reporting 0 columns is treated like a file, not given an
empty bar line.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from types import TracebackType
from typing import Any, TextIO

from tqdm import tqdm

DEFAULT_EVERY = 500  # items between two plain progress lines


def _columns(stream: TextIO) -> int:
    try:
        if not stream.isatty():
            return 0
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 0


class Progress:
    def __init__(self, total: int, label: str, *, enabled: bool = True, every: int = DEFAULT_EVERY,
                 stream: TextIO | None = None, unit: str = "chunk") -> None:
        self.stream = stream or sys.stderr
        self.unit = unit
        self.total, self.label, self.n = total, label, 0
        self.every = max(1, every)
        self._start = time.monotonic()
        self._printed_at = 0
        self._bar: Any = None
        self.mode = "off" if not enabled or total == 0 else ("bar" if _columns(self.stream) > 0 else "lines")
        if self.mode == "bar":
            width = min(shutil.get_terminal_size().columns, 120)
            self._bar = tqdm(total=total, unit=unit, desc=label, file=self.stream, ncols=width)

    def grow(self, total: int) -> None:
        """Rows arrived during the pass: the total is a moving target."""
        if total > self.total:
            self.total = total
            if self._bar is not None:
                self._bar.total = total
                self._bar.refresh()

    def update(self, n: int) -> None:
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.mode == "lines" and self.n - self._printed_at >= self.every:
            self._line()

    def _line(self) -> None:
        self._printed_at = self.n
        elapsed = max(time.monotonic() - self._start, 1e-9)
        rate = self.n / elapsed
        left = max(self.total - self.n, 0)
        eta = time.strftime("%H:%M:%S", time.gmtime(left / rate)) if rate > 0 else "?"
        pct = 100.0 * self.n / self.total if self.total else 100.0
        try:
            print(f"{self.label}: {self.n}/{self.total} {self.unit}(s) ({pct:.0f} %), {rate:.1f} {self.unit}s/s, "
                  f"elapsed {time.strftime('%H:%M:%S', time.gmtime(elapsed))}, ETA {eta}", file=self.stream, flush=True)
        except (BrokenPipeError, OSError):
            self.mode = "off"  # nobody reads it any more; the work goes on

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.mode == "lines" and self.n != self._printed_at:
            self._line()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
