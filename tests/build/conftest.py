"""Fixtures for the build-foundation tests: the private PostgreSQL root and throwaway clusters on it.

Clusters here are started with scripts/pg.sh (the same script `make db` uses) in their own state dirs under
.build/test-state (the server runs as an unprivileged user, who must be able to reach the state dir; pytest's
own tmp dirs are private to root). A missing root FAILS the tests: `make setup` builds it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragfr.build.flavors import PG_LIB, FlavorBuild, build_flavor

REPO = Path(__file__).resolve().parents[2]
PG_SH = REPO / "scripts" / "pg.sh"
ALLOWLIST = REPO / "images" / "ragdb" / "avx512-allowlist.txt"


@pytest.fixture(scope="session")
def pgroot() -> Path:
    root = Path(os.environ.get("RAGFR_PGROOT", REPO / ".build" / "pgroot"))
    if not (root / PG_LIB / "bin" / "postgres").exists():
        pytest.fail(f"no private PostgreSQL root at {root}: run `make setup`")
    return root


@pytest.fixture(scope="session")
def flavor(pgroot: Path) -> Callable[[str], FlavorBuild]:
    """Builds (or reuses, keyed on inputs) a pgvector flavor: portable, nodispatch or native."""
    return lambda name: build_flavor(name, pgroot=pgroot)


@dataclass
class Cluster:
    state: Path
    dsn: str
    log: Path
    env: dict[str, str]

    def stop(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(PG_SH), "stop"], env=self.env, capture_output=True, text=True, check=False)


def start_cluster(root: Path, state: Path, exec_prefix: str = "") -> Cluster:
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


@pytest.fixture
def cluster_factory() -> Iterator[Callable[..., Cluster]]:
    """Starts clusters in fresh state dirs; stops and deletes them at teardown."""
    base = REPO / ".build" / "test-state"
    base.mkdir(parents=True, exist_ok=True)
    started: list[Cluster] = []
    dirs: list[Path] = []

    def make(root: Path, exec_prefix: str = "") -> Cluster:
        state = Path(tempfile.mkdtemp(prefix="pg-", dir=base))
        state.chmod(0o755)
        dirs.append(state)
        cluster = start_cluster(root, state / "pg", exec_prefix)
        started.append(cluster)
        return cluster

    yield make
    for c in started:
        c.stop()
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
