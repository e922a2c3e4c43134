"""Cold cache on demand: PostgreSQL restarted (its shared_buffers are empty) and the database's files
evicted from the OS page cache.

`/proc/sys/vm/drop_caches` is not writable here (and would empty the cache of every process on the
machine), so eviction is per file: posix_fadvise(POSIX_FADV_DONTNEED) on every file of the database's
directory, after an fsync of it, since the kernel evicts only clean pages. How much of those files stayed
resident is measured before and after with mincore(2) through util-linux's `fincore`, so a cold figure
says how cold it was.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any


def database_files(data_dir: Path, database_oid: int) -> list[Path]:
    base = data_dir / "base" / str(database_oid)
    return sorted(p for p in base.iterdir() if p.is_file())


def resident_bytes(files: list[Path]) -> int | None:
    """Bytes of `files` in the page cache, or None without `fincore` (apt: util-linux)."""
    if not files or shutil.which("fincore") is None:
        return None if files else 0
    total = 0
    # fincore takes many files per call; chunks keep the command line short for a 1M-chunk database.
    for start in range(0, len(files), 500):
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES",
                              *map(str, files[start:start + 500])], capture_output=True, text=True, check=False)
        total += sum(int(x) for x in out.stdout.split() if x.isdigit())
    return total


def evict(files: list[Path]) -> dict[str, Any]:
    before = resident_bytes(files)
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue  # dropped by a concurrent VACUUM or DROP
        try:
            # The server was just stopped but, with fsync off (scripts/pg.sh), what its shutdown checkpoint
            # wrote can still be dirty in the page cache, and the kernel evicts only clean pages.
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    after = resident_bytes(files)
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files if p.exists()),
            "resident_before": before, "resident_after": after,
            "method": "posix_fadvise(DONTNEED) per file of the database; residency by fincore (mincore)"}
