"""Elapsed wall time in milliseconds, the unit every timing in results, logs and benchmarks uses."""

from __future__ import annotations

import time


def elapsed_ms(since: float, until: float | None = None) -> float:
    """Milliseconds from `since` to `until` (default: now), both `time.perf_counter()` readings, to 1 µs."""
    end = time.perf_counter() if until is None else until
    return round((end - since) * 1000, 3)
