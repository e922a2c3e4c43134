"""A fake ragfr release in the private PostgreSQL for the backup/restore tests: its databases and roles made
by the chart's own ragdb-init.sh (like ragdb's first boot), and the chart's backup/restore scripts as
rendered into the backup ConfigMap."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

import psycopg
from tests.support.chart import CHART, one, render
from tests.support.paths import REPO

from ragfr.db.connect import with_database

PG_BIN = Path(os.environ.get("RAGFR_PGROOT", REPO / ".build" / "pgroot")) / "usr/lib/postgresql/15/bin"
RAGFR = REPO / ".venv" / "bin" / "ragfr"


@dataclass
class Release:
    """The two owner-role URLs of one fake release, its data directory and the psql environment."""

    ragfr_url: str  # with the password, percent-encoded (for ragfr --dsn and psycopg)
    owui_url: str
    app_url: str  # Open WebUI's least-privilege role in ragfr's database (files/ragdb-roles.sh)
    ragfr_bare_url: str  # password-less, as the chart renders them
    owui_bare_url: str
    passwords: dict[str, str]
    data_dir: Path
    init_env: dict[str, str]
    superuser: str
    names: dict[str, str]


# The backup.integrity key (what the Secret holds) backup.sh signs with and restore.sh verifies with, given to
# every script run unless the caller's env sets its own; characters a shell or openssl could mangle included.
HMAC_KEY = "k3y with spaces/$HOME;'\"-" + "0123456789abcdef" * 2


def run_script(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = {"PATH": f"{PG_BIN}:{os.environ['PATH']}", "HOME": os.environ.get("HOME", "/tmp"),
            "BACKUP_HMAC_KEY": HMAC_KEY, **env}
    return subprocess.run(cmd, env=full, cwd=cwd, capture_output=True, text=True, check=False, timeout=600)


def rendered_scripts(dest: Path) -> dict[str, Path]:
    """backup.sh and restore.sh exactly as the chart renders them into the backup ConfigMap."""
    cm = one(render({"backup": {"enabled": True}}), "ConfigMap", "-backup")
    paths = {}
    for name in ("backup.sh", "restore.sh"):
        paths[name] = dest / name
        paths[name].write_text(cm["data"][name])
    return paths


def ragdb_init(release: Release) -> None:
    """The chart's first-boot script (files/ragdb-init.sh), then its roles script (files/ragdb-roles.sh, the
    migrations Job's first step: Open WebUI's application role and the exporter's pg_monitor role), both run
    by the superuser against the private cluster."""
    done = run_script(["sh", str(CHART / "files" / "ragdb-init.sh")], release.init_env)
    if done.returncode != 0:
        raise AssertionError(done.stderr)
    done = run_script(["sh", str(CHART / "files" / "ragdb-roles.sh")],
                      {**release.init_env, "PGUSER": release.init_env["POSTGRES_USER"]})
    if done.returncode != 0:
        raise AssertionError(done.stderr)


def drop(release: Release) -> None:
    with psycopg.connect(release.superuser, autocommit=True) as conn:
        for db in ("ragfr_db", "owui_db"):
            conn.execute(f'DROP DATABASE IF EXISTS "{release.names[db]}" WITH (FORCE)')
        for role in ("ragfr_user", "owui_user", "app_user", "monitor_user"):
            conn.execute(f'DROP ROLE IF EXISTS "{release.names[role]}"')


@contextmanager
def fake_release(pg_dsn: str, tmp_path: Path, *, url_syntax_passwords: bool = False) -> Iterator[Release]:
    """Roles and databases of one release (unique names), dropped on exit. url_syntax_passwords: passwords
    holding every character that breaks a URL or a password file line (tests of the password-less env);
    otherwise hex ones (for consumers given the percent-encoded URLs, whose driver may re-render them)."""
    tag = uuid.uuid4().hex[:8]
    names = {"ragfr_db": f"bk_ragfr_{tag}", "owui_db": f"bk_owui_{tag}",
             "ragfr_user": f"bk_ragfr_{tag}", "owui_user": f"bk_owui_{tag}",
             "app_user": f"bk_app_{tag}", "monitor_user": f"bk_mon_{tag}"}
    # Every character that breaks a URL or a libpq password file line when pasted unescaped.
    pw = ({"ragfr": f"p@ss/w?rd#50% 'x:\\{tag}", "owui": f"o@:/?#% '{uuid.uuid4().hex}",
           "app": f"a@:/?#% ';\\{uuid.uuid4().hex}"} if url_syntax_passwords
          else {"ragfr": uuid.uuid4().hex, "owui": uuid.uuid4().hex, "app": uuid.uuid4().hex})
    pw["monitor"] = uuid.uuid4().hex
    parts = urlsplit(pg_dsn)
    host, port = parts.hostname or "127.0.0.1", str(parts.port or 5432)
    init_env = {"PGHOST": host, "PGPORT": port, "PGPASSWORD": parts.password or "", "POSTGRES_USER": parts.username or "postgres",
                "RAGFR_DB": names["ragfr_db"], "RAGFR_USER": names["ragfr_user"], "RAGFR_PASSWORD": pw["ragfr"],
                "OPENWEBUI_DB": names["owui_db"], "OPENWEBUI_USER": names["owui_user"], "OPENWEBUI_PASSWORD": pw["owui"],
                "APP_USER": names["app_user"], "APP_PASSWORD": pw["app"],
                "MONITOR_USER": names["monitor_user"], "MONITOR_PASSWORD": pw["monitor"]}
    q = {k: quote(v, safe="") for k, v in pw.items()}
    rel = Release(
        ragfr_url=f"postgresql://{names['ragfr_user']}:{q['ragfr']}@{host}:{port}/{names['ragfr_db']}",
        owui_url=f"postgresql://{names['owui_user']}:{q['owui']}@{host}:{port}/{names['owui_db']}",
        app_url=f"postgresql://{names['app_user']}:{q['app']}@{host}:{port}/{names['ragfr_db']}",
        ragfr_bare_url=f"postgresql://{names['ragfr_user']}@{host}:{port}/{names['ragfr_db']}",
        owui_bare_url=f"postgresql://{names['owui_user']}@{host}:{port}/{names['owui_db']}",
        passwords=pw,
        data_dir=tmp_path / "openwebui-data", init_env=init_env, superuser=with_database(pg_dsn, "postgres"),
        names=names,
    )
    drop(rel)
    ragdb_init(rel)
    try:
        yield rel
    finally:
        drop(rel)
