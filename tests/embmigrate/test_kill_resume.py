"""`kill -9` at named points of a real migration (child process, SIGKILL from itself via
RAGFR_EMBMIGRATE_KILL_AT), then the same command again: the final state must equal an uninterrupted run's,
vector for vector, with every row embedded exactly once (the progress counter proves it)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

import psycopg
import pytest
from tests.support.embmigrate import TARGET, Snapshot, owui_insert, run_cli, snapshot

N = 20
BATCH = "8"  # 3 batches: kill points inside the 2nd one fall between committed work
_reference: dict[str, Snapshot] = {}

# Every phase boundary, and inside a batch before the write, before its commit and after it.
POINTS = [
    "after-prepare",
    "backfill-before-write:2",
    "backfill-before-commit:2",
    "backfill-after-commit:1",
    "after-backfill",
    "index-build",
    "after-index",
    "after-verify",
    "switch-before-commit",
    "after-switch",
]


def _migrate(dsn: str, kill_at: str | None = None) -> int:
    env = {"RAGFR_EMBMIGRATE_KILL_AT": kill_at} if kill_at else {}
    proc = run_cli(["embeddings", "migrate", "--dsn", dsn, "--to", TARGET, "--batch", BATCH, "--no-progress"], env=env)
    if kill_at is None:
        assert proc.returncode == 0, proc.stderr
    return proc.returncode


def _wait_for_backends_gone(dsn: str, timeout: float = 20.0) -> None:
    """The killed migrator's server backend exits by itself (client_connection_check_interval)."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                # This database's only: the cluster is shared with other tests (and test runs) migrating theirs.
                "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'ragfr embeddings%'"
                " AND datname = current_database()"
            ).fetchone()
            if row == (0,):
                return
            time.sleep(0.2)
    pytest.fail("the killed migrator's backend is still running")


def _reference_state(source_db: Callable[[int], str]) -> Snapshot:
    if "done" not in _reference:
        dsn = source_db(N)
        _migrate(dsn)
        _reference["done"] = snapshot(dsn)
    return _reference["done"]


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_kill_9_then_rerun_equals_an_uninterrupted_run(source_db: Callable[[int], str], point: str) -> None:
    reference = _reference_state(source_db)
    dsn = source_db(N)
    blocker = None
    if point == "index-build":
        # Reach the index phase, then hold a snapshot open so CREATE INDEX CONCURRENTLY is still waiting
        # (index created, not yet valid) when the kill lands.
        assert _migrate(dsn, "after-backfill") == -9
        blocker = psycopg.connect(dsn)
        blocker.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        blocker.execute("SELECT count(*) FROM document_chunk").fetchone()
    assert _migrate(dsn, point) == -9
    _wait_for_backends_gone(dsn)
    killed = snapshot(dsn)
    if point == "index-build":
        with psycopg.connect(dsn) as conn:
            assert conn.execute(
                "SELECT indisvalid FROM pg_index WHERE indexrelid = 'idx_document_chunk_vector_next'::regclass"
            ).fetchone() == (False,)
        assert blocker is not None
        blocker.rollback()
        blocker.close()
    if point == "switch-before-commit":
        assert killed["space"] == ("local:use-multilingual", 512) and killed["state"][0][0] == "ready"
    if point.startswith("backfill-"):
        # Only the committed first batch counts, and its rows are exactly those with a new vector.
        done = sum(1 for r in killed["rows"].values() if r[-2] is not None)
        assert killed["state"][0][1] == done == 8

    _migrate(dsn)
    final = snapshot(dsn)
    assert final == reference
    assert final["state"] == [("switched", N, 0)]  # each row written once, however the run was cut


# Rollback after the switch: rows Open WebUI wrote in the new space only are re-embedded with the old model
# (batches of the PREV slot), then the swap back commits.
ROLLBACK_POINTS = ["rollback-before-write:1", "rollback-before-commit:1", "rollback-after-commit:1",
                   "rollback-swap-before-commit"]
_rolled_back: dict[str, Snapshot] = {}
NEW_SPACE_ONLY = [(f"after-switch-{i}", f"Un avenant ajouté après la bascule, numéro {i}.") for i in range(3)]


def _switched_with_new_rows(source_db: Callable[[int], str]) -> str:
    dsn = source_db(N)
    _migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        owui_insert(conn, NEW_SPACE_ONLY, spec=TARGET)
    return dsn


def _rollback(dsn: str, kill_at: str | None = None) -> int:
    env = {"RAGFR_EMBMIGRATE_KILL_AT": kill_at} if kill_at else {}
    proc = run_cli(["embeddings", "rollback", "--dsn", dsn, "--batch", BATCH, "--no-progress"], env=env)
    if kill_at is None:
        assert proc.returncode == 0, proc.stderr
    return proc.returncode


@pytest.mark.slow
@pytest.mark.parametrize("point", ROLLBACK_POINTS)
def test_kill_9_during_rollback_then_rerun_equals_an_uninterrupted_rollback(
    source_db: Callable[[int], str], point: str
) -> None:
    if "done" not in _rolled_back:
        reference_dsn = _switched_with_new_rows(source_db)
        _rollback(reference_dsn)
        _rolled_back["done"] = snapshot(reference_dsn)
    reference = _rolled_back["done"]
    assert reference["space"] == ("local:use-multilingual", 512)
    dsn = _switched_with_new_rows(source_db)
    assert _rollback(dsn, point) == -9
    _wait_for_backends_gone(dsn)
    killed = snapshot(dsn)
    assert killed["space"] == (TARGET, 384)  # the swap back had not committed
    _rollback(dsn)
    final = snapshot(dsn)
    assert final["rows"] == reference["rows"] and final["space"] == reference["space"]
    assert final["columns"] == reference["columns"] and final["indexes"] == reference["indexes"]
    assert final["state"][0][0] == "rolled_back"
    assert final["state"][0][2] == len(NEW_SPACE_ONLY)  # each new-space-only row re-embedded exactly once


@pytest.mark.slow
def test_a_connection_lost_mid_backfill_is_one_line_and_the_rerun_resumes(source_db: Callable[[int], str]) -> None:
    """What a database restart looks like to the migrator: its backend ends between two batches."""
    reference = _reference_state(source_db)
    dsn = source_db(N)
    child = subprocess.Popen(
        [sys.executable, "-m", "ragfr", "embeddings", "migrate", "--dsn", dsn, "--to", TARGET, "--batch", BATCH,
         "--no-progress"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        env={**os.environ, "OMP_NUM_THREADS": "2"},
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            exists = conn.execute("SELECT to_regclass('ragfr_embedding_migration') IS NOT NULL").fetchone()
            done = exists and exists[0] and conn.execute(
                "SELECT coalesce(max(rows_embedded), 0) FROM ragfr_embedding_migration").fetchone()
            if done and done[0] > 0:
                break
            time.sleep(0.1)
        # This database's migrator only: another test (tests/owui/test_vector_index_startup.py, in the other lane
        # of scripts/test.sh) may be migrating its own database on the same cluster at this moment.
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE"
                     " 'ragfr embeddings%' AND datname = current_database()")
    _, err = child.communicate(timeout=120)
    assert child.returncode == 2 and "Traceback" not in err, err
    assert "ragfr: error: lost the database connection" in err and "re-run the same command to resume" in err
    _migrate(dsn)
    final = snapshot(dsn)
    assert final == reference and final["state"] == [("switched", N, 0)]
