"""Fixtures for the build-foundation tests: the private PostgreSQL root and throwaway clusters on it.

Clusters here are started with scripts/pg.sh (the same script `make db` uses) in their own state dirs under
.build/test-state (the server runs as an unprivileged user, who must be able to reach the state dir; pytest's
own tmp dirs are private to root). A missing root FAILS the tests: `make setup` builds it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ragfr_tools.build.flavors import PG_LIB, FlavorBuild, build_flavor
from ragfr_tools.build.pgcluster import REPO, Cluster, start_cluster, state_base


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


@pytest.fixture
def cluster_factory() -> Iterator[Callable[..., Cluster]]:
    """Starts clusters in fresh state dirs; stops and deletes them at teardown."""
    base = state_base()
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
    # A cluster that would not stop keeps its state dir: deleting it under a running server leaves a postmaster
    # nobody can stop with pg.sh any more. The test then errors, naming it.
    kept: list[str] = []
    for c in started:
        proc = c.stop()
        if proc.returncode != 0:
            kept.append(f"{c.state}: {proc.stderr.strip()[-500:]}")
    for d in dirs:
        if not any(k.startswith(str(d)) for k in kept):
            shutil.rmtree(d, ignore_errors=True)
    if kept:
        pytest.fail("pg.sh stop failed; state kept for a look:\n" + "\n".join(kept))
