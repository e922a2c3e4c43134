"""Issue 25 item 5 (Low): the chart's scripts set role passwords as SCRAM-SHA-256 verifiers computed
client-side (files/ragdb-init.sh, files/ragdb-roles.sh), so the cleartext is never in SQL text, which
pg_monitor members (the exporter) read in pg_stat_activity and a failing statement writes to the server log.

The scripts run against the private cluster with psql wrapped to echo every statement exactly as sent to the
server (`psql -e`: after variable interpolation); the captured text must hold no password, and each role
must log in with its password."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.support.backup import PG_BIN, Release, drop, fake_release
from tests.support.backup import run_script as _run
from tests.support.chart import CHART

SCRIPTS = ("ragdb-init.sh", "ragdb-roles.sh")


@pytest.fixture(params=[False, True], ids=["hex", "url-syntax"])
def release(pg_dsn: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Release]:
    with fake_release(pg_dsn, tmp_path, url_syntax_passwords=request.param) as rel:
        yield rel


def _echoing_psql(tmp_path: Path) -> tuple[Path, Path]:
    """A psql earlier on PATH that runs the real one with -e, its stdout appended to a capture file (its exit
    status kept)."""
    bindir, captured = tmp_path / "echo-bin", tmp_path / "sent.sql"
    bindir.mkdir()
    real = PG_BIN / "psql"
    wrapper = bindir / "psql"
    wrapper.write_text(f'#!/bin/sh\nexec "{real}" -e "$@" >>"{captured}"\n')
    wrapper.chmod(0o755)
    return bindir, captured


def _run_scripts(release: Release, tmp_path: Path) -> str:
    drop(release)  # fake_release ran the scripts already: again, captured, from nothing
    bindir, captured = _echoing_psql(tmp_path)
    env = {"PATH": f"{bindir}:{PG_BIN}:{os.environ['PATH']}"}
    for name in SCRIPTS:
        extra = {"PGUSER": release.init_env["POSTGRES_USER"]} if name == "ragdb-roles.sh" else {}
        done = _run(["sh", str(CHART / "files" / name)],
                    {**release.init_env, **extra, **env})
        assert done.returncode == 0, done.stderr
    return captured.read_text()


def test_no_password_in_the_sql_the_scripts_send_and_every_role_logs_in(release: Release, tmp_path: Path) -> None:
    sent = _run_scripts(release, tmp_path)
    assert "ALTER ROLE" in sent and "CREATE ROLE" in sent  # the capture works
    for pw in release.init_env["RAGFR_PASSWORD"], release.init_env["OPENWEBUI_PASSWORD"], \
            release.init_env["APP_PASSWORD"], release.init_env["MONITOR_PASSWORD"]:
        assert pw not in sent
    assert sent.count("PASSWORD 'SCRAM-SHA-256$4096:") == 4
    host_db = release.app_url.split("@", 1)[1]
    for user, pw_key in (("ragfr_user", "RAGFR_PASSWORD"), ("owui_user", "OPENWEBUI_PASSWORD"),
                         ("app_user", "APP_PASSWORD"), ("monitor_user", "MONITOR_PASSWORD")):
        name = release.names[user]
        with psycopg.connect(f"postgresql://{host_db}", user=name, password=release.init_env[pw_key]) as conn:
            assert conn.execute("SELECT current_user").fetchone() == (name,)
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(f"postgresql://{host_db}", user=name, password=release.init_env[pw_key] + "x").close()
    with psycopg.connect(release.superuser) as conn:
        stored = conn.execute("SELECT rolname, rolpassword FROM pg_authid WHERE rolname = ANY(%s)",
                              [[release.names[k] for k in ("ragfr_user", "owui_user", "app_user", "monitor_user")]]
                              ).fetchall()
    assert len(stored) == 4 and all(pw.startswith("SCRAM-SHA-256$4096:") for _, pw in stored)


def test_the_roles_script_again_keeps_the_logins(release: Release, tmp_path: Path) -> None:
    """Every migrations Job run sets the passwords again (fresh salt): the roles still log in."""
    _run_scripts(release, tmp_path)
    again = _run(["sh", str(CHART / "files" / "ragdb-roles.sh")],
                 {**release.init_env, "PGUSER": release.init_env["POSTGRES_USER"]})
    assert again.returncode == 0, again.stderr
    host_db = release.app_url.split("@", 1)[1]
    with psycopg.connect(f"postgresql://{host_db}", user=release.names["app_user"],
                         password=release.init_env["APP_PASSWORD"]) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_non_ascii_password_is_refused_before_any_sql(release: Release, tmp_path: Path) -> None:
    bindir, captured = _echoing_psql(tmp_path)
    done = _run(["sh", str(CHART / "files" / "ragdb-roles.sh")],
                {**release.init_env, "PGUSER": release.init_env["POSTGRES_USER"], "APP_PASSWORD": "mot-de-passé",
                 "PATH": f"{bindir}:{PG_BIN}:{os.environ['PATH']}"})
    assert done.returncode != 0
    assert "APP_PASSWORD holds non-ASCII characters" in done.stderr
    assert not captured.exists()
