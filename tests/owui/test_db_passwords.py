"""Issue 13 item 5 through the REAL Open WebUI 0.12.4 (patched): its database configuration is the chart's,
with passwords holding `@ / ? # % '`, a space, `:` and `\\`. Its vectors go through the least-privilege
role database.ragfr.appUser (issue 14 item 4), which the migrations Job granted.

The roles, the chart render and the containers' env come from tests/support/db_release.py (external mode
pointed at the private cluster). The migrations Job and init container db-passfile run with their rendered
command and env; Open WebUI then starts with the rendered DATABASE_URL, PGVECTOR_DB_URL and PGPASSFILE
(password-less URLs, both passwords in the password file) on top of the settings of tests/owui/stack.py.
That exercises each driver Open WebUI has: SQLAlchemy + psycopg2 (its own database: Alembic and peewee
migrations at start, sign-up; document_chunk writes), SQLAlchemy + psycopg 3 async (its own database), and
ragfr's adapter (ragfr.owui.runtime.native: psycopg 3 pool on the URL of the pgvector session) for the chat search.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest
from tests.support.db_release import argv, external_release, local_env

from .stack import (
    EMBED_NAME,
    Server,
    ask,
    knowledge_base,
    passages,
    sign_up_admin,
    start_double,
    start_open_webui,
    stop,
)
from .test_e2e import ANSWERABLE, DOCUMENT, FILENAME, THEFT_SENTENCE

pytestmark = [pytest.mark.owui, pytest.mark.slow]


def test_open_webui_connects_through_the_charts_password_file(
    owui_site_packages: Path, patched_tree: Path, pg_dsn: str, tmp_path: Path
) -> None:
    with external_release(pg_dsn, values={"embedding": {"model": f"{EMBED_NAME}:1", "dims": 384}}) as rel:
        job = rel.container("Job", "-migrate-*", "migrate")
        done = subprocess.run(argv(job), env=local_env(job), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        init = rel.container("Deployment", "-openwebui", "db-passfile")
        (mount,) = [m for m in init.mounts if m.volume == "db-credentials"]
        volume = tmp_path / "db-credentials"
        done = subprocess.run([a.replace(mount.path, str(volume)) for a in argv(init)], env=local_env(init),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr

        rendered = dict(rel.container("Deployment", "-openwebui", "open-webui").env)
        # The vectors as Open WebUI's least-privilege role (DML only, no DDL: patch 4 skips Open WebUI's own
        # CREATE INDEX at start, which PostgreSQL refuses to a non-owner; tests/db/test_app_role.py).
        assert rendered["PGVECTOR_DB_URL"].startswith(f"postgresql://{rel.names['app']}@")
        database_env = {k: rendered[k] for k in ("DATABASE_URL", "PGVECTOR_DB_URL")}
        database_env["PGPASSFILE"] = rendered["PGPASSFILE"].replace(mount.path, str(volume))
        double = start_double(tmp_path)
        try:
            server: Server = start_open_webui(tmp_path, owui_site_packages, patched_tree, rendered["PGVECTOR_DB_URL"],
                                              double, database_env)
            try:
                token = sign_up_admin(server)
                kb = knowledge_base(server, token, "Contrats", {FILENAME: DOCUMENT})
                searches = len(server.log_events("search"))
                reply = ask(server, token, ANSWERABLE, kb)
                log = server.log.read_text(errors="replace")
            finally:
                stop(server.proc)
        finally:
            stop(double.proc)
        assert "password authentication failed" not in log and "no password supplied" not in log
        # ragfr's adapter searched (its pool connected) and found the passage Open WebUI had written.
        assert len(server.log_events("search")) > searches, log[-3000:]
        assert any(THEFT_SENTENCE in text for text, _ in passages(reply)), reply
        # Open WebUI's own tables and the vectors are in PostgreSQL, as the two roles.
        owui_db = rel.superuser.rsplit("/", 1)[0] + "/" + rel.names["openwebui"]
        with psycopg.connect(owui_db) as conn:
            row = conn.execute('SELECT email FROM "user"').fetchone()
            assert row == ("admin@example.org",)
        ragfr_db = rel.superuser.rsplit("/", 1)[0] + "/" + rel.names["ragfr"]
        with psycopg.connect(ragfr_db) as conn:
            row = conn.execute("SELECT count(*) FROM document_chunk WHERE collection_name = %s", (kb,)).fetchone()
            assert row is not None and row[0] >= 2
