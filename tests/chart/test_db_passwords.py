"""Issue 13 item 5: no password is ever pasted into a connection URL, and the chart's containers connect with
a password holding `@ / ? # % '`, a space, `:` and `\\`.

The render test reads every URL-valued env entry of every container in every mode; the connection tests
create roles with such passwords in the private cluster and run the rendered commands with the rendered env
(tests/support/db_release.py): the migrations Job, Open WebUI's init containers wait-for-schema and
db-passfile, then libpq through the password file exactly as Open WebUI's container is configured.
The Open WebUI server itself on that configuration: tests/owui/test_db_passwords.py.
"""

from __future__ import annotations

import re
import stat
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from tests.support.chart import EXAMPLES, example_values, pod_specs, render
from tests.support.db_release import PASSWORDS, argv, external_release, local_env

from ragfr.db import passfile
from ragfr.errors import ConfigError

URL = re.compile(r"^postgres(ql)?(\+\w+)?://")
MODES = {
    "internal": {},
    "external": {"database": {"mode": "external", "external": {"host": "db.example", "existingSecret": "s"}}},
    "cnpg": {"database": {"mode": "cnpg", "openwebui": {"user": "ragfr"}}},
}


def _env_entries(docs: list[dict]) -> list[tuple[str, str, str]]:
    out = []
    for obj, spec in pod_specs(docs):
        for c in (spec.get("initContainers") or []) + spec["containers"]:
            for e in c.get("env") or []:
                out.append((f"{obj['metadata']['name']}:{c['name']}", e["name"], str(e.get("value", ""))))
    return out


@pytest.mark.parametrize("case", [f"example:{e}" for e in EXAMPLES] + [f"mode:{m}" for m in MODES])
def test_no_database_url_carries_a_password(case: str) -> None:
    kind, name = case.split(":")
    docs = render(example_values(name) if kind == "example" else MODES[name])
    urls = [(where, var, value) for where, var, value in _env_entries(docs) if URL.match(value)]
    assert urls, "no database URL rendered: the test would prove nothing"
    for where, var, value in urls:
        # $(VAR) expansion cannot percent-encode: any reference to a variable inside a URL is the bug.
        assert "$(" not in value, f"{where} {var}={value}"
        assert urlsplit(value).password is None, f"{where} {var}={value}"
        assert "password=" not in urlsplit(value).query, f"{where} {var}={value}"


def test_passfile_lines_escape_colon_and_backslash() -> None:
    assert passfile.line("postgresql://u@h:6543/d?sslmode=disable", "a:b\\c@/?#% 'd") == "h:6543:d:u:a\\:b\\\\c@/?#% 'd"
    assert passfile.line("postgresql+psycopg2://us%3Aer@h/d%20b", "x") == "h:5432:d b:us\\:er:x"
    with pytest.raises(ConfigError, match="line break"):
        passfile.line("postgresql://u@h/d", "a\nb")
    with pytest.raises(ConfigError, match="carries a password"):
        passfile.line("postgresql://u:pw@h/d", "pw")


def test_pgpass_names_an_unset_variable_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ragfr", "pgpass", "--out", str(tmp_path / "p"),
                           "--entry", "NOPE_URL=NOPE_PASSWORD"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert done.stderr.strip() == ("ragfr: error: --entry NOPE_URL=NOPE_PASSWORD: environment variable NOPE_URL, "
                                   "NOPE_PASSWORD is not set")


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)


_WHOAMI = ("import os, psycopg\n"
           "for var in os.environ['CHECK_URLS'].split():\n"
           "    with psycopg.connect(os.environ[var]) as c:\n"
           "        print(var, c.execute('SELECT current_user, current_database()').fetchone())\n")


def test_chart_containers_connect_with_a_password_full_of_url_syntax(pg_dsn: str, tmp_path: Path) -> None:
    with external_release(pg_dsn, values={"embedding": {"model": "bge-m3:567m", "dims": 1024}}) as rel:
        # (a) the migrations Job: `ragfr migrate`, env from the rendered Job (PGPASSWORD + password-less URL).
        job = rel.container("Job", "-migrate-*", "migrate")
        done = _run(argv(job), local_env(job))
        assert done.returncode == 0, done.stderr
        # Open WebUI's wait-for-schema (the `ragfr embeddings k8s` Job copies this container's env).
        wait = rel.container("Deployment", "-openwebui", "wait-for-schema")
        done = _run(argv(wait), local_env(wait))
        assert done.returncode == 0, done.stderr
        grants = rel.container("Deployment", "-openwebui", "wait-for-grants")  # as Open WebUI's role
        done = _run(argv(grants), local_env(grants))
        assert done.returncode == 0, done.stderr
        # The helm test pod's env, through psycopg.
        test = rel.container("Pod", "-test", "test")
        done = _run([sys.executable, "-c", _WHOAMI], local_env(test, CHECK_URLS="DATABASE_URL"))
        assert done.returncode == 0, done.stderr
        assert f"('{rel.names['ragfr']}', '{rel.names['ragfr']}')" in done.stdout

        # (b) Open WebUI's password file, written by init container db-passfile into its volume.
        init = rel.container("Deployment", "-openwebui", "db-passfile")
        (mount,) = [m for m in init.mounts if m.volume == "db-credentials"]
        volume = tmp_path / "db-credentials"
        cmd = [a.replace(mount.path, str(volume)) for a in argv(init)]
        done = _run(cmd, local_env(init))
        assert done.returncode == 0, done.stderr
        pgpass = volume / "pgpass"
        assert stat.S_IMODE(pgpass.stat().st_mode) == 0o600  # libpq ignores a file others can read
        for pw in PASSWORDS.values():
            assert pw not in " ".join(cmd)  # names of variables in argv, never values

        # ... and the Open WebUI container's own env: both URLs through libpq's password file, no PGPASSWORD.
        owui = rel.container("Deployment", "-openwebui", "open-webui")
        env = dict(owui.env)
        assert "PGPASSWORD" not in env, "PGPASSWORD would override the password file for BOTH databases"
        assert env["PGPASSFILE"].startswith(mount.path)
        run_env = local_env(owui, PGPASSFILE=env["PGPASSFILE"].replace(mount.path, str(volume)),
                            CHECK_URLS="DATABASE_URL PGVECTOR_DB_URL")
        done = _run([sys.executable, "-c", _WHOAMI], run_env)
        assert done.returncode == 0, done.stderr
        assert f"DATABASE_URL ('{rel.names['openwebui']}', '{rel.names['openwebui']}')" in done.stdout
        # The vectors as Open WebUI's least-privilege role (database.ragfr.appUser), not as the owner.
        assert f"PGVECTOR_DB_URL ('{rel.names['app']}', '{rel.names['ragfr']}')" in done.stdout


@pytest.mark.parametrize("values", [
    {},
    {"openwebui": {"podSecurityContext": {"runAsUser": 1000, "runAsNonRoot": True}}},
    {"openwebui": {"podSecurityContext": {"runAsUser": 1000}, "securityContext": {"runAsUser": 2000}}},
])
def test_db_passfile_runs_as_the_open_webui_user(values: dict) -> None:
    # libpq reads only a 0600 password file, and Open WebUI (root with no capabilities by default) cannot read
    # another user's: the writer must be the reader. Left unset, each container would run as its IMAGE's user
    # (the ragfr image: 65532; the stock Open WebUI image: root), which the cluster smoke caught.
    (obj, spec), = [(o, s) for o, s in pod_specs(render(values)) if o["metadata"]["name"].endswith("-openwebui")]
    pod_uid = (spec.get("securityContext") or {}).get("runAsUser")
    (owui,) = [c for c in spec["containers"] if c["name"] == "open-webui"]
    (writer,) = [c for c in spec["initContainers"] if c["name"] == "db-passfile"]
    expected = owui["securityContext"].get("runAsUser", pod_uid if pod_uid is not None else 0)
    assert writer["securityContext"]["runAsUser"] == expected
