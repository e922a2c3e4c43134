"""Peak memory of a PostgreSQL cluster while a statement runs (an HNSW build, say).

Measured as the sum of the proportional set size (PSS, /proc/PID/smaps_rollup) of the postmaster and
every process it forked, sampled in a background thread. PSS splits each shared page between the
processes mapping it, so shared_buffers and the dynamic shared memory a parallel index build uses are
counted once, not once per worker as a sum of RSS would. Only a cluster on this machine can be
sampled: `ClusterMemory.of(conn)` returns None for a remote server (its backend pid is not ours).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

_PROC = Path("/proc")


def _ppid(pid: int) -> int | None:
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: fields restart after the last ")".
    return int(stat.rsplit(")", 1)[1].split()[1])


def _pss_kib(pid: int) -> int:
    try:
        for line in (_PROC / str(pid) / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass  # a worker that exited between listing and reading
    return 0


def _children(parent: int) -> list[int]:
    out = []
    for entry in os.scandir(_PROC):
        if entry.name.isdigit() and _ppid(int(entry.name)) == parent:
            out.append(int(entry.name))
    return out


@dataclass
class ClusterMemory:
    """Samples the cluster's total PSS every `interval` seconds between start() and stop()."""

    postmaster: int
    interval: float = 0.25
    baseline_kib: int = 0
    peak_kib: int = 0
    samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @classmethod
    def of(cls, conn: psycopg.Connection[Any]) -> ClusterMemory | None:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        backend = int(row[0]) if row else -1
        postmaster = _ppid(backend)
        if postmaster is None or not (_PROC / str(postmaster) / "smaps_rollup").exists():
            return None
        return cls(postmaster)

    def total_kib(self) -> int:
        return _pss_kib(self.postmaster) + sum(_pss_kib(p) for p in _children(self.postmaster))

    def start(self) -> None:
        self.baseline_kib = self.peak_kib = self.total_kib()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="cluster-memory", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak_kib = max(self.peak_kib, self.total_kib())
            self.samples += 1

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak_kib = max(self.peak_kib, self.total_kib())
        return {"baseline_mib": round(self.baseline_kib / 1024, 1), "peak_mib": round(self.peak_kib / 1024, 1),
                "samples": self.samples, "interval_s": self.interval,
                "measured": "sum of PSS of the postmaster and its children (/proc/PID/smaps_rollup)"}


def timed_with_memory(conn: psycopg.Connection[Any], statement: str) -> dict[str, Any]:
    """Run `statement` on `conn`, returning its wall time and the cluster's memory while it ran."""
    sampler = ClusterMemory.of(conn)
    if sampler is not None:
        sampler.start()
    t = time.perf_counter()
    try:
        conn.execute(statement)
    finally:
        seconds = round(time.perf_counter() - t, 2)
        memory = sampler.stop() if sampler is not None else {"measured": "not sampled: the server is not local"}
    return {"seconds": seconds, "memory": memory}
