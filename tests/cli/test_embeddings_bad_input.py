"""Bad input gives one clear line on stderr (no traceback), a non-zero exit, and changes nothing."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
from tests.support.embmigrate import TARGET, snapshot

from ragfr.cli import main
from ragfr.db import names


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    rc = main(["embeddings", *args])
    err = capsys.readouterr().err.strip()
    return rc, err


def _one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("ragfr: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--to", "local:no-such-model"], "unknown local embedder"),
        (["--to", "cohere:embed"], "unknown embedder backend"),
        (["--to", TARGET, "--dims", "512"], "--dims 512 disagrees with local:multilingual-e5-small"),
        (["--to", TARGET, "--batch", "0"], "--batch must be between"),
        # Judged by the server before any work (it used to fail at the index build, after the backfill).
        (["--to", TARGET, "--maintenance-work-mem", "12 apples"], "--maintenance-work-mem '12 apples': invalid value"),
        (["--to", TARGET, "--maintenance-work-mem", "1kB"], "--maintenance-work-mem '1kB': 1 kB is outside the valid"),
    ],
)
def test_bad_model_or_dims_is_refused_and_nothing_changes(
    source_db: Callable[[int], str], capsys: pytest.CaptureFixture[str], extra: list[str], expected: str
) -> None:
    dsn = source_db(4)
    before = snapshot(dsn)
    rc, err = _cli(capsys, "migrate", "--dsn", dsn, *extra)
    assert rc == 2
    assert expected in _one_line_error(err)
    assert snapshot(dsn) == before


def test_database_without_our_schema_is_refused(empty_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = _cli(capsys, "migrate", "--dsn", empty_db, "--to", TARGET)
    assert rc == 2
    assert "no ragfr schema" in _one_line_error(err)
    with psycopg.connect(empty_db) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace")
        assert tables.fetchone() == (0,)


def test_a_migration_already_running_is_refused(
    source_db: Callable[[int], str], capsys: pytest.CaptureFixture[str]
) -> None:
    dsn = source_db(4)
    before = snapshot(dsn)
    # The lock a running migrator holds for its whole run, taken here by the test's own session.
    with psycopg.connect(dsn, autocommit=True) as holder:
        holder.execute("SET application_name = 'other-migrator'")
        holder.execute("SELECT pg_advisory_lock(%s)", (names.LOCK_KEY,))
        for verb in (["migrate", "--to", TARGET], ["rollback"], ["finalize"]):
            rc, err = _cli(capsys, verb[0], "--dsn", dsn, *verb[1:])
            assert rc == 2
            line = _one_line_error(err)
            assert "already running" in line and "other-migrator" in line
    assert snapshot(dsn) == before


def test_commands_out_of_order_are_refused(source_db: Callable[[int], str], capsys: pytest.CaptureFixture[str]) -> None:
    dsn = source_db(4)
    before = snapshot(dsn)
    for verb, expected in ((["finalize"], "finalize applies after the switch"),
                           (["rollback"], "nothing to roll back")):
        rc, err = _cli(capsys, *verb, "--dsn", dsn)
        assert rc == 2 and expected in _one_line_error(err)
    assert snapshot(dsn) == before
    assert _cli(capsys, "migrate", "--dsn", dsn, "--to", TARGET, "--no-switch", "--no-progress")[0] == 0
    during = snapshot(dsn)
    rc, err = _cli(capsys, "migrate", "--dsn", dsn, "--to", "local:use-multilingual")
    assert rc == 2 and "migration #1 to local:multilingual-e5-small is open" in _one_line_error(err)
    assert snapshot(dsn) == during


def test_status_and_dry_run_change_nothing(source_db: Callable[[int], str], capsys: pytest.CaptureFixture[str]) -> None:
    dsn = source_db(6)
    before = snapshot(dsn)
    rc = main(["embeddings", "migrate", "--dsn", dsn, "--to", TARGET, "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0 and "chunks: 6, to embed: 6" in out and "nothing was changed" in out
    assert main(["embeddings", "status", "--dsn", dsn]) == 0
    assert "no embedding migration has ever run" in capsys.readouterr().out
    assert snapshot(dsn) == before
