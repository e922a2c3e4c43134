"""Backups to S3, proven by restoring from the bucket: the chart rendered with backup.target=s3, its backup.sh
AND backup-upload-s3.sh exactly as rendered into the backup ConfigMap, the upload container's env exactly as
rendered (rclone configured by RCLONE_CONFIG_TARGET_* alone, keys from the existingSecret), run against the
private PostgreSQL, then the newest set fetched back from the bucket with rclone and restored with restore.sh.

PROTOCOL DOUBLE: the S3 SERVER is moto's (`moto_server`, .venv-s3double, scripts/setup-s3double.sh). No real S3
server can run here: MinIO is in no registry this machine reaches, Ceph's radosgw needs a whole Ceph cluster.
Everything else is real: the client is rclone (Debian bookworm's 1.60.1, the version the chart's
rclone/rclone image tag pins), speaking S3 over HTTP to the double; the scripts are the chart's; the
databases, corpus (PIAF, e5) and restore are those of tests/chart/test_backup_restore.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.chart.test_backup_restore import HMAC_KEY, _credentials, _load, _search_ids
from tests.support.backup import Release, drop, fake_release, ragdb_init
from tests.support.backup import run_script as _run
from tests.support.chart import env_of, error_line, one, render
from tests.support.paths import REPO

from ragfr_tools.kubesim import pods as kp

MOTO = Path(os.environ.get("S3DOUBLE_VENV", REPO / ".venv-s3double")) / "bin" / "moto_server"
BUCKET, PREFIX, KEEP = "ragfr-backups", "prod", 2
STAMP = r"^[0-9]{8}T[0-9]{6}Z$"
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ragfr-backup-s3"},
          "stringData": {"access-key-id": "test-key-id", "secret-access-key": "test/secret+key"}}
INTEGRITY = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ragfr-backup-integrity"},
             "stringData": {"hmac-key": HMAC_KEY}}
PASSPHRASE = "correct horse battery staple, 32+ chars; $HOME 'q'"
CRYPT = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ragfr-backup-crypt"},
         "stringData": {"passphrase": PASSPHRASE}}
# moto speaks plain http on loopback: the one place insecureEndpoint is right (a network you trust).
S3_VALUES = {"bucket": BUCKET, "prefix": PREFIX, "existingSecret": SECRET["metadata"]["name"]}


@pytest.fixture
def release(pg_dsn: str, tmp_path: Path) -> Iterator[Release]:
    with fake_release(pg_dsn, tmp_path, url_syntax_passwords=True) as rel:
        yield rel


@pytest.fixture
def s3(tmp_path: Path, late_setup: None) -> Iterator[str]:
    """moto's S3 server on a free loopback port (the protocol double, see the module docstring)."""
    assert MOTO.exists(), f"{MOTO} missing: run bash scripts/setup-s3double.sh"
    assert shutil.which("rclone"), "rclone missing: apt-get install -t bookworm rclone (scripts/setup-apt.sh)"
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path / "moto.log").open("wb")
    proc = subprocess.Popen([str(MOTO), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            assert proc.poll() is None, (tmp_path / "moto.log").read_text()
            time.sleep(0.2)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def _upload_env(endpoint: str, tmp_path: Path, encrypted: bool = True) -> tuple[dict[str, str], str]:
    """The upload container's env as the kubelet builds it from the render (Secret resolved), and its script."""
    encryption = {"existingSecret": CRYPT["metadata"]["name"]} if encrypted else {"enabled": False}
    values = {"backup": {"enabled": True, "target": "s3", "keep": KEEP,
                         "integrity": {"existingSecret": INTEGRITY["metadata"]["name"]},
                         "s3": {**S3_VALUES, "endpoint": endpoint, "insecureEndpoint": True,
                                "encryption": encryption}}}
    docs = render(values)
    cron = one(docs, "CronJob", "-backup")
    job = {"kind": "Job", "metadata": cron["metadata"], "spec": cron["spec"]["jobTemplate"]["spec"]}
    pod = kp.pod_of(job, kp.index([*docs, SECRET, INTEGRITY, CRYPT]))
    (upload,) = pod.containers
    assert upload.command == ("/bin/sh", "/ragfr-backup/backup-upload-s3.sh")
    assert [c.name for c in pod.init_containers] == ["backup"]
    backup_env = dict(pod.init_containers[0].env)
    assert backup_env["BACKUP_KEEP"] == "0"  # the emptyDir is scratch: retention happens in the bucket
    assert backup_env["BACKUP_HMAC_KEY"] == HMAC_KEY  # the key _credentials() gives backup.sh and restore.sh
    env = dict(upload.env)
    assert env["RCLONE_CONFIG_TARGET_TYPE"] == "s3" and env["RCLONE_CONFIG_TARGET_ENDPOINT"] == endpoint
    assert env["RCLONE_CONFIG_TARGET_SECRET_ACCESS_KEY"] == "test/secret+key"
    if encrypted:
        assert env["BACKUP_CRYPT_PASSPHRASE"] == PASSPHRASE and env["S3_ENCRYPTION"] == "true"
        assert env["RCLONE_CONFIG_SEALED_TYPE"] == "crypt"
        assert env["RCLONE_CONFIG_SEALED_REMOTE"] == f"target:{BUCKET}/{PREFIX}"
    else:
        assert not [k for k in env if "SEALED" in k or "CRYPT" in k]
    script = one(docs, "ConfigMap", "-backup")["data"]["backup-upload-s3.sh"]
    # HOME: the pod's /tmp emptyDir (rclone's config and cache dirs); BACKUP_DIR: the pod's /backup emptyDir.
    return {**env, "HOME": str(tmp_path)}, script


def _rclone(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["rclone", *args], env={"PATH": os.environ["PATH"], **env}, capture_output=True, text=True,
                          check=False, timeout=300)


def _sealed_env(env: dict[str, str], passphrase: str) -> dict[str, str]:
    """What the runbook has the operator do to read encrypted sets: the upload container's env, with the
    passphrase obscured into RCLONE_CONFIG_SEALED_PASSWORD through stdin."""
    obscured = subprocess.run(["rclone", "obscure", "-"], input=passphrase, env={"PATH": os.environ["PATH"], **env},
                              capture_output=True, text=True, check=True).stdout.strip()
    return {**env, "RCLONE_CONFIG_SEALED_PASSWORD": obscured}


@pytest.mark.parametrize("encrypted", [True, False], ids=["encrypted", "in-clear"])
def test_s3_backup_keeps_the_newest_sets_and_restores_from_the_bucket(release: Release, s3: str,
                                                                       tmp_path: Path, encrypted: bool) -> None:
    env, upload_script = _upload_env(s3, tmp_path, encrypted)
    (tmp_path / "backup-upload-s3.sh").write_text(upload_script)
    cm = one(render({"backup": {"enabled": True}}), "ConfigMap", "-backup")["data"]
    for name in ("backup.sh", "restore.sh"):
        (tmp_path / name).write_text(cm[name])
    made = _rclone(env, "mkdir", f"target:{BUCKET}")  # the bucket exists before the first backup (the operator's)
    assert made.returncode == 0, made.stderr
    _load(release, tmp_path / "corpus")
    before = _search_ids(release)

    # An upload interrupted long ago (no SHA256SUMS): retention removes it once it is older than what is kept.
    (tmp_path / "crashed").mkdir()
    (tmp_path / "crashed" / "ragfr.dump").write_bytes(b"partial")
    assert _rclone(env, "copy", str(tmp_path / "crashed"), f"target:{BUCKET}/{PREFIX}/20200101T000000Z/").returncode == 0

    timings: dict[str, list[float]] = {"backup": [], "upload": []}
    sets = []
    for run in range(3):
        scratch = tmp_path / f"emptydir-{run}"  # each Job run gets a fresh /backup emptyDir
        scratch.mkdir()
        # Set names are one-second stamps and real runs are minutes apart: start each run in a new second
        # (the upload refuses to overwrite a set of the same stamp, checked below).
        time.sleep(1 - time.time() % 1 + 0.01)
        t0 = time.monotonic()
        done = _run(["sh", str(tmp_path / "backup.sh")], {**_credentials(release), "BACKUP_DIR": str(scratch),
                                                           "BACKUP_KEEP": "0", "DATA_DIR": str(release.data_dir)})
        timings["backup"].append(time.monotonic() - t0)
        assert done.returncode == 0, done.stderr
        (stamp,) = [p.name for p in scratch.iterdir()]
        sets.append(stamp)
        t0 = time.monotonic()
        up = _run(["sh", str(tmp_path / "backup-upload-s3.sh")], {**env, "BACKUP_DIR": str(scratch)})
        timings["upload"].append(time.monotonic() - t0)
        assert up.returncode == 0, up.stderr
        assert f"backup-upload: {stamp} -> {BUCKET}/{PREFIX}/{stamp}/" in up.stdout

    # A second upload of the same stamp (two runs in one second) would overwrite a complete set: refused.
    again = _run(["sh", str(tmp_path / "backup-upload-s3.sh")], {**env, "BACKUP_DIR": str(scratch)})
    assert again.returncode == 1 and f"{sets[-1]}/ already holds a complete set; not overwritten" in again.stderr

    # Read back the way the runbook says: through sealed: (the passphrase) when encrypted.
    read_env, remote = (_sealed_env(env, PASSPHRASE), "sealed:") if encrypted else (env, f"target:{BUCKET}/{PREFIX}/")
    listed = _rclone(read_env, "lsl", remote)
    assert listed.returncode == 0, listed.stderr
    objects = {line.split()[-1]: int(line.split()[0]) for line in listed.stdout.splitlines()}
    raw = _rclone(env, "lsf", "-R", "--files-only", f"target:{BUCKET}/{PREFIX}/")
    if encrypted:  # in the bucket: only ciphertext, names readable with .bin; no pg_dump header, no text
        assert sorted(raw.stdout.split()) == sorted(f"{name}.bin" for name in objects), raw.stdout
        blob = subprocess.run(["rclone", "cat", f"target:{BUCKET}/{PREFIX}/{sets[-1]}/ragfr.dump.bin"],
                              env={"PATH": os.environ["PATH"], **env}, capture_output=True, check=True).stdout
        assert blob.startswith(b"RCLONE\x00\x00") and b"PGDMP" not in blob and b"document_chunk" not in blob
        sums = subprocess.run(["rclone", "cat", f"target:{BUCKET}/{PREFIX}/{sets[-1]}/SHA256SUMS.bin"],
                              env={"PATH": os.environ["PATH"], **env}, capture_output=True, check=True).stdout
        assert b"ragfr.dump" not in sums
        wrong = _rclone(_sealed_env(env, PASSPHRASE + "x"), "copy", f"sealed:{sets[-1]}/", str(tmp_path / "wrong"))
        assert wrong.returncode != 0  # the wrong passphrase decrypts nothing
    else:
        assert sorted(raw.stdout.split()) == sorted(objects)
    newest = sets[-1]
    local = tmp_path / f"emptydir-{len(sets) - 1}" / newest
    assert objects == {f"{s}/{p.name}": p.stat().st_size for s in sets[-KEEP:]
                       for p in (tmp_path / f"emptydir-{sets.index(s)}" / s).iterdir()}, listed.stdout
    assert sorted({k.split("/")[0] for k in objects}) == sorted(sets[-KEEP:])  # oldest and crashed sets gone
    assert len(objects) == 5 * KEEP  # three files, SHA256SUMS.hmac and SHA256SUMS

    # The runbook's restore from S3: fetch the newest set with rclone, then restore.sh as for a PVC.
    fetched = tmp_path / "fetched" / newest
    t0 = time.monotonic()
    got = _rclone(read_env, "copy", f"{remote}{newest}/", str(fetched))
    download_s = time.monotonic() - t0
    assert got.returncode == 0, got.stderr
    assert sorted(p.name for p in fetched.iterdir()) == sorted(p.name for p in local.iterdir())

    drop(release)
    shutil.rmtree(release.data_dir)
    release.data_dir.mkdir()
    ragdb_init(release)
    t0 = time.monotonic()
    done = _run(["sh", str(tmp_path / "restore.sh")], {"RESTORE_SET": str(fetched), **_credentials(release),
                                                         "DATA_DIR": str(release.data_dir), "TMPDIR": str(tmp_path)})
    restore_s = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    assert _search_ids(release) == before
    with psycopg.connect(release.owui_url) as conn:
        assert conn.execute("SELECT title FROM chat WHERE id = 'c1'").fetchone() == ("Sinistres",)
    with psycopg.connect(release.app_url) as conn:
        assert conn.execute("SELECT count(*) > 0 FROM document_chunk").fetchone() == (True,)
    sizes = {p.name: p.stat().st_size for p in fetched.iterdir()}
    fmt = lambda ts: ", ".join(f"{t:.2f}" for t in ts)  # noqa: E731
    print(f"\nbackup {fmt(timings['backup'])} s, upload {fmt(timings['upload'])} s, "
          f"download {download_s:.2f} s, restore {restore_s:.2f} s, set sizes {sizes}")


def test_a_plain_http_endpoint_is_refused_unless_declared_insecure() -> None:
    """Dumps cross the network to the endpoint: https only, http only by an explicit insecureEndpoint."""
    base = {"enabled": True, "target": "s3", "integrity": {"existingSecret": "ragfr-backup-integrity"}}
    s3v = {**S3_VALUES, "encryption": {"existingSecret": "ragfr-backup-crypt"}}
    message = error_line({"backup": {**base, "s3": {**s3v, "endpoint": "http://minio.backup.svc:9000"}}})
    assert message.startswith("backup.s3.endpoint=http://minio.backup.svc:9000 is plain http"), message
    assert "set backup.s3.insecureEndpoint=true" in message
    for endpoint, insecure in (("http://minio.backup.svc:9000", True), ("https://minio.backup.svc:9000", False)):
        cron = one(render({"backup": {**base, "s3": {**s3v, "endpoint": endpoint, "insecureEndpoint": insecure}}}),
                   "CronJob", "-backup")
        (upload,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
        assert env_of(upload)["RCLONE_CONFIG_TARGET_ENDPOINT"] == endpoint
    cnpg = {"mode": "cnpg", "openwebui": {"user": "ragfr"}, "cnpg": {"backup": {
        "enabled": True, "destinationPath": "s3://ragfr-wal/prod", "existingSecret": "s3",
        "endpointURL": "http://minio.backup.svc:9000"}}}
    assert error_line({"database": cnpg}).startswith(
        "database.cnpg.backup.endpointURL=http://minio.backup.svc:9000 is plain http")
    cnpg["cnpg"]["backup"]["insecureEndpoint"] = True
    assert one(render({"database": cnpg}), "ObjectStore", "-db-backup")


def test_s3_needs_an_integrity_key_of_the_operators() -> None:
    """A key generated in the cluster would die with it while the bucket lives on: with S3 it is required."""
    message = error_line({"backup": {"enabled": True, "target": "s3",
                                     "s3": {**S3_VALUES, "endpoint": "https://minio.backup.svc:9000"}}})
    assert message.startswith("backup.target=s3 needs backup.integrity.existingSecret"), message
    assert "keep a copy of it outside the cluster" in message


def test_s3_sets_are_encrypted_by_default_with_a_passphrase_of_the_operators() -> None:
    """Encryption at rest is on with target=s3 unless switched off; its passphrase must come from a Secret."""
    base = {"enabled": True, "target": "s3", "integrity": {"existingSecret": "ragfr-backup-integrity"}}
    s3 = {**S3_VALUES, "endpoint": "https://minio.backup.svc:9000"}
    message = error_line({"backup": {**base, "s3": s3}})
    assert message.startswith("backup.target=s3 encrypts the sets (backup.s3.encryption.enabled, the default)")
    assert "set backup.s3.encryption.existingSecret" in message and "keep a copy of it outside the cluster" in message
    cron = one(render({"backup": {**base, "s3": {**s3, "encryption": {"existingSecret": "c", "keyName": "k"}}}}),
               "CronJob", "-backup")
    (upload,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert env_of(upload)["BACKUP_CRYPT_PASSPHRASE"] == {"secretKeyRef": {"name": "c", "key": "k"}}
    assert env_of(upload)["RCLONE_CONFIG_SEALED_FILENAME_ENCRYPTION"] == "off"
    clear = one(render({"backup": {**base, "s3": {**s3, "encryption": {"enabled": False}}}}), "CronJob", "-backup")
    (upload,) = clear["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert "S3_ENCRYPTION" not in env_of(upload)
