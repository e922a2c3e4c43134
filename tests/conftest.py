"""Shared fixtures: the private PostgreSQL test cluster (our pgvector build) and migrated databases.

`make test` starts the cluster and exports RAGFR_TEST_DSN; run alone, the fixture starts it through
scripts/pg.sh. A test that needs the database FAILS when there is none: a skipped database test would
let CI pass without testing anything.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import uuid
from collections.abc import Callable, Iterator

import pytest
from tests.support import late_setup as _late
from tests.support.paths import REPO

from ragfr_tools import pgdb

MigratedDb = Callable[..., str]


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """Superuser DSN of the private test cluster."""
    dsn = os.environ.get("RAGFR_TEST_DSN")
    if dsn:
        return dsn
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "pg.sh"), "start"], capture_output=True, text=True, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("DATABASE_URL=")]
    if proc.returncode != 0 or not lines:
        pytest.fail(f"no test database: scripts/pg.sh start failed (run `make setup`):\n{proc.stderr[-2000:]}")
    return lines[-1].split("=", 1)[1]


@pytest.fixture(scope="session")
def late_setup() -> None:
    """What `make test` builds while the first tests run (.venv-owui, .venv-s3double, the podman images) is there:
    waits for it under scripts/test.sh, returns at once otherwise (tests/support/late_setup.py)."""
    _late.wait()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `make test`'s compute and index lanes only: the tests that wait for the late setup run last."""
    if _late.active():
        items[:] = _late.last(items)


@pytest.fixture(scope="session")
def _templates(pg_dsn: str) -> Iterator[dict[tuple[int, str], str]]:
    made: dict[tuple[int, str], str] = {}
    yield made
    for name in made.values():
        pgdb.drop_database(pg_dsn, name)


@pytest.fixture
def migrated_db(pg_dsn: str, _templates: dict[tuple[int, str], str]) -> Iterator[MigratedDb]:
    """Factory: `migrated_db(dims=1024, model="ollama:bge-m3")` -> DSN of a fresh, fully migrated database.

    Each (dims, model) pair is migrated once into a template; every call clones it (fast, isolated).
    """
    from ragfr.vector_index.upgrade import migrate

    created: list[str] = []

    def make(dims: int = 1024, model: str = "ollama:bge-m3") -> str:
        key = (dims, model)
        if key not in _templates:
            tag = hashlib.sha256(f"{dims}/{model}".encode()).hexdigest()[:10]
            name = f"ragfr_tpl_{dims}_{tag}_{os.getpid()}"
            migrate(pgdb.create_database(pg_dsn, name, replace=True), dims, model)
            _templates[key] = name
        name = f"ragfr_t_{uuid.uuid4().hex[:12]}"
        created.append(name)
        return pgdb.create_database(pg_dsn, name, template=_templates[key])

    yield make
    for name in created:
        pgdb.drop_database(pg_dsn, name)


@pytest.fixture
def empty_db(pg_dsn: str) -> Iterator[str]:
    """DSN of a fresh UTF-8 database with nothing in it (for migration-runner tests)."""
    with pgdb.fresh_database(pg_dsn, "ragfr_e") as dsn:
        yield dsn
