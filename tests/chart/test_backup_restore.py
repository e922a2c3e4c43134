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

import base64
import hashlib
import hmac
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.support.backup import HMAC_KEY, RAGFR, Release, drop, fake_release, ragdb_init, rendered_scripts
from tests.support.backup import run_script as _run
from tests.support.chart import env_of, one, render, render_raw
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
    passwords apart, as the chart renders them; the passwords hold @ / ? # % ' and :. BACKUP_HMAC_KEY: the
    key that signs (backup.sh) and verifies (restore.sh) each set's SHA256SUMS."""
    return {"RAGFR_DATABASE_URL": release.ragfr_bare_url, "OPENWEBUI_DATABASE_URL": release.owui_bare_url,
            "RAGFR_DB_PASSWORD": release.passwords["ragfr"], "OPENWEBUI_DB_PASSWORD": release.passwords["owui"],
            "BACKUP_HMAC_KEY": HMAC_KEY}


def _backup_env(release: Release, backup_dir: Path, keep: int) -> dict[str, str]:
    """The env the CronJob gives backup.sh, with this cluster's values (names checked against the render)."""
    env = {**_credentials(release),
           "BACKUP_DIR": str(backup_dir), "BACKUP_KEEP": str(keep), "DATA_DIR": str(release.data_dir)}
    cron = one(render({"backup": {"enabled": True}}), "CronJob", "-backup")
    container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert set(env) <= {e["name"] for e in container["env"]}, "backup.sh's env no longer matches the CronJob"
    return env


def _one_set(release: Release, tmp_path: Path, files: dict[str, str] | None = None) -> tuple[dict[str, Path], Path]:
    """The rendered scripts and one backup set of `release` (its data directory holding `files`)."""
    scripts = rendered_scripts(tmp_path)
    backup_dir = tmp_path / "backups"
    backup_dir.mkdir()
    release.data_dir.mkdir()
    for name, text in (files or {}).items():
        (release.data_dir / name).write_text(text)
    done = _run(["sh", str(scripts["backup.sh"])], _backup_env(release, backup_dir, keep=0))
    assert done.returncode == 0, done.stderr
    (set_dir,) = list(backup_dir.iterdir())
    return scripts, set_dir


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
        "SHA256SUMS", "SHA256SUMS.hmac", "openwebui-data.tar.gz", "openwebui.dump", "ragfr.dump"]
    assert (set_dir / "SHA256SUMS.hmac").read_text() == f"{_sign(set_dir, HMAC_KEY)}  {set_dir.name}\n"
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
    scripts, set_dir = _one_set(release, tmp_path)
    dump = set_dir / "ragfr.dump"
    data = bytearray(dump.read_bytes())
    data[len(data) // 2] ^= 0xFF
    dump.write_bytes(bytes(data))
    refused = _run(["sh", str(scripts["restore.sh"])], {
        "RESTORE_SET": str(set_dir), **_credentials(release), "DATA_DIR": ""})
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == f"restore: {set_dir} fails its SHA256SUMS; refusing"


def _sign(set_dir: Path, key: str, stamp: str = "") -> str:
    """The signature backup.sh writes: HMAC-SHA256 of "ragfr-backup-set <stamp>\\n" and SHA256SUMS."""
    signed = f"ragfr-backup-set {stamp or set_dir.name}\n".encode() + (set_dir / "SHA256SUMS").read_bytes()
    return hmac.new(key.encode(), signed, hashlib.sha256).hexdigest()


def _resum(set_dir: Path, *, drop_line: str = "", key: str = HMAC_KEY) -> None:
    """What someone with write access to the set but not the key would like to do: rewrite SHA256SUMS to match
    the files (leaving drop_line's file out), then sign it with `key`."""
    names = sorted(p.name for p in set_dir.iterdir() if p.name not in ("SHA256SUMS", "SHA256SUMS.hmac", drop_line))
    lines = [f"{hashlib.sha256((set_dir / n).read_bytes()).hexdigest()}  {n}\n" for n in names]
    (set_dir / "SHA256SUMS").write_text("".join(lines))
    (set_dir / "SHA256SUMS.hmac").write_text(f"{_sign(set_dir, key)}  {set_dir.name}\n")


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _tables(release: Release) -> int:
    with psycopg.connect(release.owui_url) as conn:
        return conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0]


def _unlisted_altered(s: Path) -> None:  # the finding: a tampered dump left out of a correctly signed manifest
    _flip(s / "openwebui.dump")
    _resum(s, drop_line="openwebui.dump")


def _extra_file(s: Path) -> None:
    (s / "zz-extra.sql").write_text("DROP TABLE chat;")


def _missing(s: Path) -> None:
    (s / "openwebui-data.tar.gz").unlink()


def _forged(s: Path) -> None:  # file and checksum rewritten together, the old signature kept
    _flip(s / "ragfr.dump")
    hmac_line = (s / "SHA256SUMS.hmac").read_text()
    _resum(s)
    (s / "SHA256SUMS.hmac").write_text(hmac_line)


def _forged_own_key(s: Path) -> None:  # ... or signed with a key of the forger's
    _flip(s / "ragfr.dump")
    _resum(s, key="forger's key " + "f" * 32)


def _unsigned(s: Path) -> None:
    (s / "SHA256SUMS.hmac").unlink()


def _restamped(s: Path) -> None:  # the signature line claims a newer stamp (the directory's is kept)
    mac, _ = (s / "SHA256SUMS.hmac").read_text().split()
    (s / "SHA256SUMS.hmac").write_text(f"{mac}  29991231T235959Z\n")


def _renamed(s: Path) -> Path:  # an older set passed off as a newer one: the whole directory renamed
    newer = s.with_name("29991231T235959Z")
    s.rename(newer)
    return newer


TAMPERED = {
    "unlisted-altered-file": (_unlisted_altered, "openwebui.dump is not listed in SHA256SUMS"),
    "unlisted-extra-file": (_extra_file, "zz-extra.sql is not listed in SHA256SUMS"),
    "missing-file": (_missing, "openwebui-data.tar.gz, listed in SHA256SUMS, is missing"),
    "altered-file": (lambda s: _flip(s / "openwebui-data.tar.gz"),
                     "openwebui-data.tar.gz does not match its SHA-256 in SHA256SUMS (damaged or altered)"),
    "forged-manifest": (_forged, "SHA256SUMS.hmac does not authenticate SHA256SUMS with this BACKUP_HMAC_KEY"),
    "forged-with-own-key": (_forged_own_key, "SHA256SUMS.hmac does not authenticate SHA256SUMS"),
    "unsigned": (_unsigned, "no SHA256SUMS.hmac, the manifest is not authenticated"),
    "signature-restamped": (_restamped, "SHA256SUMS.hmac does not authenticate SHA256SUMS"),
    "set-renamed": (_renamed, "this set was signed as {stamp} but lies in 29991231T235959Z: a set renamed"),
}


@pytest.mark.parametrize("case", TAMPERED, ids=list(TAMPERED))
def test_restore_refuses_a_set_its_signed_manifest_does_not_cover_exactly(
        release: Release, tmp_path: Path, case: str) -> None:
    """Refused before anything is written, with a line naming the file: sha256sum -c alone passed an altered
    file the manifest left out, and anyone able to write the set could rewrite a dump and its checksum."""
    scripts, set_dir = _one_set(release, tmp_path)
    tamper, expected = TAMPERED[case]
    expected = expected.format(stamp=set_dir.name)
    set_dir = tamper(set_dir) or set_dir
    refused = _run(["sh", str(scripts["restore.sh"])], {
        "RESTORE_SET": str(set_dir), **_credentials(release), "DATA_DIR": "", "TMPDIR": str(tmp_path)})
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert f"restore: {set_dir}: {expected}" in refused.stderr, refused.stderr
    assert _tables(release) == 0 and "restored" not in refused.stdout


def test_restore_refuses_the_wrong_key_and_accepts_the_right_one(release: Release, tmp_path: Path) -> None:
    scripts, set_dir = _one_set(release, tmp_path, {"upload.txt": "contrat"})
    env = {"RESTORE_SET": str(set_dir), **_credentials(release), "DATA_DIR": "", "TMPDIR": str(tmp_path)}
    for wrong in (HMAC_KEY[:-1] + "X", "", HMAC_KEY + " "):
        refused = _run(["sh", str(scripts["restore.sh"])], {**env, "BACKUP_HMAC_KEY": wrong})
        assert refused.returncode == 1, refused.stderr
        assert "BACKUP_HMAC_KEY" in refused.stderr.strip().splitlines()[-1] and "refusing" in refused.stderr
    assert _tables(release) == 0
    done = _run(["sh", str(scripts["restore.sh"])], env)
    assert done.returncode == 0, done.stderr
    assert f"restore: set {set_dir.name} restored" in done.stdout


def test_an_unsigned_set_restores_only_when_the_operator_says_so(release: Release, tmp_path: Path) -> None:
    """Sets written before backup.integrity have no SHA256SUMS.hmac: RESTORE_ALLOW_UNSIGNED=1, loudly."""
    scripts, set_dir = _one_set(release, tmp_path)
    _unsigned(set_dir)
    done = _run(["sh", str(scripts["restore.sh"])], {"RESTORE_SET": str(set_dir), **_credentials(release),
                                                      "DATA_DIR": "", "TMPDIR": str(tmp_path),
                                                      "RESTORE_ALLOW_UNSIGNED": "1"})
    assert done.returncode == 0, done.stderr
    assert "restoring an UNAUTHENTICATED set (RESTORE_ALLOW_UNSIGNED=1)" in done.stderr


@pytest.mark.parametrize("key", ["", "short-key"])
def test_backup_refuses_to_write_an_unsigned_set(release: Release, tmp_path: Path, key: str) -> None:
    scripts = rendered_scripts(tmp_path)
    backup_dir = tmp_path / "backups"
    backup_dir.mkdir()
    release.data_dir.mkdir()
    done = _run(["sh", str(scripts["backup.sh"])], {**_backup_env(release, backup_dir, keep=0), "BACKUP_HMAC_KEY": key})
    assert done.returncode == 1 and "BACKUP_HMAC_KEY is empty or shorter than 32 characters" in done.stderr
    assert list(backup_dir.iterdir()) == []


def test_the_integrity_key_comes_from_a_secret_generated_only_for_a_volume() -> None:
    """target=pvc without backup.integrity.existingSecret: generated (kept on uninstall, NOTES say to copy it
    out); with an existingSecret: that one; target=s3 requires it (test_backup_s3.py)."""
    docs = render({"backup": {"enabled": True}})
    secret = one(docs, "Secret", "-backup-integrity")
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert len(base64.b64decode(secret["data"]["hmac-key"])) == 64
    cron = one(docs, "CronJob", "-backup")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert env_of(cron["containers"][0])["BACKUP_HMAC_KEY"] == {
        "secretKeyRef": {"name": secret["metadata"]["name"], "key": "hmac-key"}}
    notes = next(t for p, t in render_raw({"backup": {"enabled": True}}).items() if p.endswith("NOTES.txt"))
    assert "The chart GENERATED that key: it dies with the cluster. Copy it" in notes
    own = render({"backup": {"enabled": True, "integrity": {"existingSecret": "mine", "keyName": "k"}}})
    assert not [d for d in own if d["kind"] == "Secret" and d["metadata"]["name"].endswith("-backup-integrity")]
    cron = one(own, "CronJob", "-backup")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert env_of(cron["containers"][0])["BACKUP_HMAC_KEY"] == {"secretKeyRef": {"name": "mine", "key": "k"}}


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
