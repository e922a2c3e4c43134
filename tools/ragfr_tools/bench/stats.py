"""Latency summaries and the machine context every figure is reported with."""

from __future__ import annotations

import os
import platform
import subprocess
from typing import Any

import numpy as np
import psycopg


def summarize(ms: list[float]) -> dict[str, Any]:
    """n, mean, p50, p95 (numpy's linear interpolation between order statistics), min, max, in ms."""
    if not ms:
        return {"n": 0}
    a = np.asarray(ms, dtype=float)
    return {
        "n": int(a.size), "mean": _r(a.mean()), "p50": _r(np.percentile(a, 50)), "p95": _r(np.percentile(a, 95)),
        "min": _r(a.min()), "max": _r(a.max()),
    }


def _r(x: float) -> float:
    return round(float(x), 2)


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    model = platform.processor() or "unknown"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return {"cpu_model": model, "cpus": os.cpu_count(), "python": platform.python_version(),
            "kernel": platform.release()}


def server_settings(dsn: str) -> dict[str, Any]:
    """Settings that move the figures (the test cluster's are small: scripts/pg.sh)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT current_setting('server_version'), current_setting('shared_buffers'),"
            " current_setting('work_mem'), current_setting('effective_cache_size'),"
            " current_setting('max_parallel_workers_per_gather'), current_setting('jit'),"
            " (SELECT default_version FROM pg_available_extensions WHERE name = 'vector')"
        ).fetchone()
    assert row is not None
    keys = ("server_version", "shared_buffers", "work_mem", "effective_cache_size",
            "max_parallel_workers_per_gather", "jit", "pgvector")
    return dict(zip(keys, row, strict=True))
