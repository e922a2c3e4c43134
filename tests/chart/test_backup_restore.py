"""Backups proven by restoring: the backup and restore scripts AS RENDERED into the chart's backup ConfigMap,
run against the private PostgreSQL (our pgvector build).

The databases are made the way ragdb makes them (the chart's own ragdb-init.sh: owner roles, extensions by
the superuser) and migrated as the owner (like the migrations Job); a French corpus (PIAF contexts) is
loaded by `ragfr ingest` with the real offline e5 model. After the backup, both databases AND both roles
are dropped and the data directory deleted; ragdb-init.sh recreates empty ones, restore.sh restores, and
the same searches must return the same passage ids in the same order.

STAND-IN: Open WebUI's application database gets one table written here (a chat row), not Open WebUI's
own schema: this test proves the mechanics (ragfr corpus, retention, damaged sets) quickly and without the
Open WebUI venv; tests/owui/test_backup_restore.py does the same through the real Open WebUI.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.support.backup import RAGFR, Release, drop, fake_release, ragdb_init, rendered_scripts
from tests.support.backup import run_script as _run
from tests.support.chart import one, render
from tests.support.paths import PIAF_JSON

E5 = "local:multilingual-e5-small"
DOCUMENTS = 40
QUESTIONS = ["Quand a eu lieu la bataille ?", "Quel club de football a gagné le championnat ?",
             "Qui a écrit ce roman ?"]


@pytest.fixture
def release(pg_dsn: str, tmp_path: Path) -> Iterator[Release]:
    with fake_release(pg_dsn, tmp_path, url_syntax_passwords=True) as rel:
        yield rel


def _load(release: Release, corpus: Path) -> None:
    migrated = _run([str(RAGFR), "migrate", "--dsn", release.ragfr_url, "--dims", "384", "--embedding-model", E5,
                     "--app-role", release.names["app_user"]], {})
    assert migrated.returncode == 0, migrated.stderr
    corpus.mkdir()
    paragraphs = [p["context"] for a in json.loads(PIAF_JSON.read_text())["data"] for p in a["paragraphs"]]
    for i, text in enumerate(paragraphs[:DOCUMENTS]):
        (corpus / f"piaf-{i:03d}.md").write_text(text)
    ingested = _run([str(RAGFR), "ingest", "--dsn", release.ragfr_url, "--collection", "piaf", "--no-progress",
                     str(corpus)], {})
    assert ingested.returncode == 0, ingested.stderr
    with psycopg.connect(release.owui_url) as conn:  # STAND-IN for Open WebUI's schema (module docstring)
        conn.execute("CREATE TABLE chat (id text PRIMARY KEY, title text, chat jsonb)")
        conn.execute("INSERT INTO chat VALUES ('c1', 'Sinistres', '{\"messages\": [\"Quels délais ?\"]}')")
    uploads = release.data_dir / "uploads"
    uploads.mkdir(parents=True)
    (uploads / "piaf-000.md").write_bytes((corpus / "piaf-000.md").read_bytes())
    (release.data_dir / "cache").mkdir()
    (release.data_dir / "cache" / "embedding-model.bin").write_bytes(b"\0" * 4096)


def _search_ids(release: Release) -> list[list[str]]:
    ids = []
    for question in QUESTIONS:
        done = _run([str(RAGFR), "search", "--dsn", release.ragfr_url, "--collection", "piaf", "--no-rerank",
                     "-k", "10", "--json", question], {})
        assert done.returncode == 0, done.stderr
        ids.append([hit["id"] for hit in json.loads(done.stdout)["results"]])
    return ids


def _credentials(release: Release) -> dict[str, str]:
    """The database env of the CronJob's container (restore.sh reuses it): password-less URLs and the
    passwords apart, as the chart renders them; the passwords hold @ / ? # % ' and :."""
    return {"RAGFR_DATABASE_URL": release.ragfr_bare_url, "OPENWEBUI_DATABASE_URL": release.owui_bare_url,
            "RAGFR_DB_PASSWORD": release.passwords["ragfr"], "OPENWEBUI_DB_PASSWORD": release.passwords["owui"]}


def _backup_env(release: Release, backup_dir: Path, keep: int) -> dict[str, str]:
    """The env the CronJob gives backup.sh, with this cluster's values (names checked against the render)."""
    env = {**_credentials(release),
           "BACKUP_DIR": str(backup_dir), "BACKUP_KEEP": str(keep), "DATA_DIR": str(release.data_dir)}
    cron = one(render({"backup": {"enabled": True}}), "CronJob", "-backup")
    container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert set(env) <= {e["name"] for e in container["env"]}, "backup.sh's env no longer matches the CronJob"
    return env


def test_backup_then_restore_into_fresh_databases_gives_the_same_passages(release: Release, tmp_path: Path) -> None:
    scripts = rendered_scripts(tmp_path)
    _load(release, tmp_path / "corpus")
    before = _search_ids(release)
    assert all(len(ids) == 10 for ids in before), before
    backup_dir = tmp_path / "backups"
    backup_dir.mkdir()

    t0 = time.monotonic()
    done = _run(["sh", str(scripts["backup.sh"])], _backup_env(release, backup_dir, keep=2))
    backup_s = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    (set_dir,) = [p for p in backup_dir.iterdir() if not p.name.startswith(".")]
    assert sorted(p.name for p in set_dir.iterdir()) == [
        "SHA256SUMS", "openwebui-data.tar.gz", "openwebui.dump", "ragfr.dump"]
    dump_bytes = {p.name: p.stat().st_size for p in set_dir.iterdir()}

    drop(release)
    shutil.rmtree(release.data_dir)
    release.data_dir.mkdir()
    ragdb_init(release)
    restore_env = {"RESTORE_SET": str(set_dir), **_credentials(release), "DATA_DIR": str(release.data_dir),
                   "TMPDIR": str(tmp_path)}
    t0 = time.monotonic()
    done = _run(["sh", str(scripts["restore.sh"])], restore_env)
    restore_s = time.monotonic() - t0
    assert done.returncode == 0, done.stderr

    assert _search_ids(release) == before
    with psycopg.connect(release.owui_url) as conn:
        assert conn.execute("SELECT title FROM chat WHERE id = 'c1'").fetchone() == ("Sinistres",)
    with psycopg.connect(release.ragfr_url) as conn:
        owner = conn.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'document_chunk'").fetchone()
        assert owner == (release.names["ragfr_user"],)  # owned by the owner role, as after a fresh install
    with psycopg.connect(release.app_url) as conn:  # Open WebUI's role keeps its grants (restored from the dump)
        assert conn.execute("SELECT count(*) > 0 FROM document_chunk").fetchone() == (True,)
    restored = release.data_dir / "uploads" / "piaf-000.md"
    assert restored.read_bytes() == (tmp_path / "corpus" / "piaf-000.md").read_bytes()
    assert not (release.data_dir / "cache").exists()  # caches are rebuilt, not backed up

    # A second restore into the now-filled databases is refused before it writes anything.
    again = _run(["sh", str(scripts["restore.sh"])], {**restore_env, "DATA_DIR": ""})
    assert again.returncode == 1 and "is not empty" in again.stderr, again.stderr
    print(f"\nbackup {backup_s:.2f}s, restore {restore_s:.2f}s, {DOCUMENTS} documents, set sizes {dump_bytes}")


def test_restore_refuses_a_damaged_set(release: Release, tmp_path: Path) -> None:
    scripts = rendered_scripts(tmp_path)
    backup_dir = tmp_path / "backups"
    backup_dir.mkdir()
    release.data_dir.mkdir()
    done = _run(["sh", str(scripts["backup.sh"])], _backup_env(release, backup_dir, keep=0))
    assert done.returncode == 0, done.stderr
    (set_dir,) = list(backup_dir.iterdir())
    dump = set_dir / "ragfr.dump"
    data = bytearray(dump.read_bytes())
    data[len(data) // 2] ^= 0xFF
    dump.write_bytes(bytes(data))
    refused = _run(["sh", str(scripts["restore.sh"])], {
        "RESTORE_SET": str(set_dir), **_credentials(release), "DATA_DIR": ""})
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == f"restore: {set_dir} fails its SHA256SUMS; refusing"


def test_backup_keeps_the_newest_sets_only(release: Release, tmp_path: Path) -> None:
    scripts = rendered_scripts(tmp_path)
    backup_dir = tmp_path / "backups"
    backup_dir.mkdir()
    release.data_dir.mkdir()
    made = []
    for _ in range(3):
        done = _run(["sh", str(scripts["backup.sh"])], _backup_env(release, backup_dir, keep=2))
        assert done.returncode == 0, done.stderr
        made.append(done.stdout.split("backup: set ")[1].split()[0])
    assert len(set(made)) == 3  # a run within the same second as the previous one waits for a new stamp
    assert sorted(p.name for p in backup_dir.iterdir()) == sorted(made)[1:]
