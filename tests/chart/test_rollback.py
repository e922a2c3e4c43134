"""`helm rollback` after an upgrade that added a migration: render revision 2 (new image) then revision 1
(old image, what the rollback re-applies), run revision 1's rendered Job command with the real ragfr CLI
against a database that a newer ragfr migrated, and check the line the operator reads in the Job log is
the one docs/runbooks/rollback.md quotes."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from tests.support.chart import Doc, one, render
from tests.support.paths import REPO

from ragfr.db.migrate import migrations_dir

RUNBOOK = REPO / "docs" / "runbooks" / "rollback.md"
RAGFR = REPO / ".venv" / "bin" / "ragfr"


@pytest.fixture
def app_role(pg_dsn: str) -> Iterator[str]:
    """Open WebUI's role (database.ragfr.appUser), which ragdb's roles script or the operator makes before the
    Job grants it; unique per test, dropped with what it was granted."""
    name = f"rb_app_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(name)))
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        dbs = [r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datallowconn")]
    for db in dbs:
        try:
            with psycopg.connect(pg_dsn.rsplit("/", 1)[0] + "/" + db, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        except psycopg.OperationalError:
            # Dropped meanwhile by a test running beside this one (scripts/test.sh runs lanes side by side on the
            # shared cluster): nothing of the role's is left in it. DROP ROLE below still fails if anything is.
            continue
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def _kubelet(container: Doc, docs: list[Doc], dsn: str) -> tuple[list[str], dict[str, str]]:
    """The container's argv and env as the kubelet builds them: ConfigMap keys resolved from the same render,
    $(VAR) expanded; the database URL (Secret-built in the cluster) replaced by the test database's."""
    env: dict[str, str] = {}
    for entry in container.get("env", []):
        ref = entry.get("valueFrom", {}).get("configMapKeyRef")
        if ref is not None:
            cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == ref["name"])
            env[entry["name"]] = cm["data"][ref["key"]]
        elif "value" in entry:
            env[entry["name"]] = entry["value"]
    env["DATABASE_URL"] = dsn

    def expand(text: str) -> str:
        for key, value in env.items():
            text = text.replace(f"$({key})", value)
        return text

    return [expand(a) for a in [*container["command"], *container.get("args", [])]], env


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert cmd[0] == "ragfr"
    return subprocess.run([str(RAGFR), *cmd[1:]], env={**os.environ, **env}, capture_output=True,
                          text=True, check=False, timeout=300)


def test_rollback_job_refuses_with_the_documented_line(migrated_db: Callable[..., str], tmp_path: Path,
                                                      app_role: str) -> None:
    role = {"database": {"ragfr": {"appUser": app_role}}}
    old_values = {"migrations": {"image": {"tag": "0.1.0"}}, **role}
    new_values = {"migrations": {"image": {"tag": "0.2.0"}}, **role}
    new_docs, old_docs = render(new_values, revision=2), render(old_values, revision=1)
    new = one(new_docs, "Job", "-migrate-*")
    old = one(old_docs, "Job", "-migrate-*")
    # What the rollback re-applies: revision 1's Job, under its own name, with the old image.
    assert old["metadata"]["name"] != new["metadata"]["name"]
    old_main = old["spec"]["template"]["spec"]["containers"][0]
    assert old_main["image"].endswith(":0.1.0")

    # Revision 2's image knows one more migration than this checkout (stand-in for a newer ragfr image).
    newer = tmp_path / "migrations"
    shutil.copytree(migrations_dir(), newer)
    (newer / "0101_newer_release.sql").write_text("CREATE TABLE ragfr_newer_feature (id integer);\n")
    dsn = migrated_db(dims=1024, model="ollama:bge-m3:567m")
    new_main = new["spec"]["template"]["spec"]["containers"][0]
    cmd, env = _kubelet(new_main, new_docs, dsn)
    upgraded = _run(cmd, {**env, "RAGFR_MIGRATIONS_DIR": str(newer)})
    assert upgraded.returncode == 0, upgraded.stderr

    refused = _run(*_kubelet(old_main, old_docs, dsn))
    assert refused.returncode != 0
    line = refused.stderr.strip().splitlines()[-1]
    assert line == ("ragfr: error: the database has migration(s) [101] that this ragfr does not know "
                    "(was it migrated by a newer ragfr?); refusing to touch it")
    assert line in RUNBOOK.read_text(), "docs/runbooks/rollback.md no longer quotes the operator's message"

    # The old Open WebUI pods still start: their wait-for-schema accepts a newer schema.
    wait = one(old_docs, "Deployment", "-openwebui")["spec"]["template"]["spec"]
    wait_container = next(c for c in wait["initContainers"] if c["name"] == "wait-for-schema")
    waited = _run(*_kubelet(wait_container, old_docs, dsn))
    assert waited.returncode == 0 and waited.stdout.startswith("schema complete ("), waited.stdout + waited.stderr
    assert "`schema complete (…)`" in RUNBOOK.read_text()


def test_upgrade_from_the_untagged_bge_m3_space_follows_the_runbook(migrated_db: Callable[..., str],
                                                                   app_role: str) -> None:
    """Installs from before model pinning recorded `ollama:bge-m3`; the chart now says `bge-m3:567m`. The
    migrations Job refuses, and the rename in docs/runbooks/chart-upgrade.md makes it pass, rows included."""
    import re

    import psycopg

    dsn = migrated_db(dims=1024, model="ollama:bge-m3")
    with psycopg.connect(dsn) as conn:
        conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata) "
                     "VALUES ('c1', %s::vector, 'kb', 'Article 1', '{}')", ("[" + ",".join(["0.5"] * 1024) + "]",))
    docs = render({"database": {"ragfr": {"appUser": app_role}}})
    job = one(docs, "Job", "-migrate-*")["spec"]["template"]["spec"]["containers"][0]
    refused = _run(*_kubelet(job, docs, dsn))
    assert "the database's embedding space is ollama:bge-m3, --embedding-model asks for ollama:bge-m3:567m" in (
        refused.stderr)
    runbook = (REPO / "docs" / "runbooks" / "chart-upgrade.md").read_text().replace("\n", " ")
    (sql,) = re.findall(r"`(UPDATE ragfr_embedding_space .*?;)`", runbook)
    with psycopg.connect(dsn) as conn:
        conn.execute(sql)
    migrated = _run(*_kubelet(job, docs, dsn))
    assert migrated.returncode == 0, migrated.stderr
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT embedding_model FROM document_chunk").fetchall() == [("ollama:bge-m3:567m",)]
