"""Start and stop private PostgreSQL clusters from Python through scripts/pg.sh (the script `make db` uses).

Used by the build tests to run other pgvector flavors, or our build under an emulated CPU, in their own
state dirs.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ragfr_tools.repo import REPO

PG_SH = REPO / "scripts" / "pg.sh"


def state_base(owner: str = "postgres") -> Path:
    """Folder for throwaway clusters' state: under .build when the server's OS user can reach it, else under
    /var/tmp (a checkout below a private folder such as /root is not traversable by that user)."""
    base = REPO / ".build" / "test-state"
    base.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        probe = subprocess.run(["runuser", "-u", owner, "--", "test", "-x", str(base)], check=False)
        if probe.returncode != 0:
            base = Path("/var/tmp") / f"ragfr-test-state-{hashlib.sha256(str(REPO).encode()).hexdigest()[:12]}"
            base.mkdir(parents=True, exist_ok=True)
            base.chmod(0o755)
    return base


@dataclass
class Cluster:
    state: Path
    dsn: str
    log: Path
    env: dict[str, str]

    def stop(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(PG_SH), "stop"], env=self.env, capture_output=True, text=True, check=False)


def start_cluster(root: Path, state: Path, exec_prefix: str = "") -> Cluster:
    """Start (initdb on first use) a cluster on PostgreSQL root `root` with state in `state`.

    `exec_prefix` is a command the postmaster runs under, e.g. "qemu-x86_64 -cpu Skylake-Client".
    """
    env = {**os.environ, "RAGFR_PGROOT": str(root), "RAGFR_PG_STATE": str(state)}
    env.pop("RAGFR_PG_EXEC_PREFIX", None)
    if exec_prefix:
        env["RAGFR_PG_EXEC_PREFIX"] = exec_prefix
    proc = subprocess.run(["bash", str(PG_SH), "start"], env=env, capture_output=True, text=True, check=False)
    log = state / "server.log"
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise AssertionError(f"pg.sh start failed ({proc.returncode}): {proc.stderr[-2000:]}\n{tail}")
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("DATABASE_URL="), proc.stdout
    return Cluster(state=state, dsn=last.split("=", 1)[1], log=log, env=env)
