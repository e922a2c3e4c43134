"""`helm rollback` after an upgrade that added a migration: render revision 2 (new image) then revision 1
(old image, what the rollback re-applies), run revision 1's rendered Job command with the real ragfr CLI
against a database that a newer ragfr migrated, and check the line the operator reads in the Job log is
the one docs/runbooks/rollback.md quotes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.support.chart import Doc, one, render
from tests.support.paths import REPO

from ragfr.db.migrate import migrations_dir

RUNBOOK = REPO / "docs" / "runbooks" / "rollback.md"
RAGFR = REPO / ".venv" / "bin" / "ragfr"


def _command(container: Doc, dsn: str) -> list[str]:
    """The container's command + args as the kubelet runs them ($(DATABASE_URL) expanded)."""
    return [a.replace("$(DATABASE_URL)", dsn) for a in [*container["command"], *container["args"]]]


def _run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    assert cmd[0] == "ragfr"
    return subprocess.run([str(RAGFR), *cmd[1:]], env={**os.environ, **(env or {})}, capture_output=True,
                          text=True, check=False, timeout=300)


def test_rollback_job_refuses_with_the_documented_line(migrated_db: Callable[..., str], tmp_path: Path) -> None:
    old_values = {"migrations": {"image": {"tag": "0.1.0"}}}
    new_values = {"migrations": {"image": {"tag": "0.2.0"}}}
    new = one(render(new_values, revision=2), "Job", "-migrate-2")
    old = one(render(old_values, revision=1), "Job", "-migrate-1")
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
    upgraded = _run(_command(new_main, dsn), {"RAGFR_MIGRATIONS_DIR": str(newer)})
    assert upgraded.returncode == 0, upgraded.stderr

    refused = _run(_command(old_main, dsn))
    assert refused.returncode != 0
    line = refused.stderr.strip().splitlines()[-1]
    assert line == ("ragfr: error: the database has migration(s) [101] that this ragfr does not know "
                    "(was it migrated by a newer ragfr?); refusing to touch it")
    assert line in RUNBOOK.read_text(), "docs/runbooks/rollback.md no longer quotes the operator's message"

    # The old Open WebUI pods still start: their wait-for-schema accepts a newer schema.
    wait = one(render(old_values, revision=1), "Deployment", "-openwebui")["spec"]["template"]["spec"]
    wait_container = next(c for c in wait["initContainers"] if c["name"] == "wait-for-schema")
    waited = _run(_command(wait_container, dsn))
    assert waited.returncode == 0 and waited.stdout.strip() == "schema at version 101", waited.stderr
    assert "schema at version 101" in RUNBOOK.read_text()


def test_upgrade_from_the_untagged_bge_m3_space_follows_the_runbook(migrated_db: Callable[..., str]) -> None:
    """Installs from before model pinning recorded `ollama:bge-m3`; the chart now says `bge-m3:567m`. The
    migrations Job refuses, and the rename in docs/runbooks/chart-upgrade.md makes it pass, rows included."""
    import re

    import psycopg

    dsn = migrated_db(dims=1024, model="ollama:bge-m3")
    with psycopg.connect(dsn) as conn:
        conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata) "
                     "VALUES ('c1', %s::vector, 'kb', 'Article 1', '{}')", ("[" + ",".join(["0.5"] * 1024) + "]",))
    job = one(render(), "Job", "-migrate-1")["spec"]["template"]["spec"]["containers"][0]
    refused = _run(_command(job, dsn))
    assert "the database's embedding space is ollama:bge-m3, --embedding-model asks for ollama:bge-m3:567m" in (
        refused.stderr)
    runbook = (REPO / "docs" / "runbooks" / "chart-upgrade.md").read_text().replace("\n", " ")
    (sql,) = re.findall(r"`(UPDATE ragfr_embedding_space .*?;)`", runbook)
    with psycopg.connect(dsn) as conn:
        conn.execute(sql)
    migrated = _run(_command(job, dsn))
    assert migrated.returncode == 0, migrated.stderr
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT embedding_model FROM document_chunk").fetchall() == [("ollama:bge-m3:567m",)]
