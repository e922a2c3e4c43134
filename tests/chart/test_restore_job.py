"""The restore Job (`make restore-job`, docs/runbooks/restore.md; issue 48): derived from the backup CronJob the
operator's values render, it must schedule with Open WebUI scaled to 0 (the CronJob's pod requires an Open WebUI pod
beside it), write the data volume at the path the CronJob reads it from (/openwebui-data, where a runbook once said
`rm -rf /data/*`), as Open WebUI's user, and only after the set was verified and the databases restored.

The Job's containers are also RUN here, in their order, as rendered (command, env, mount paths mapped onto
temporary directories, Secrets resolved), with the chart's scripts against the private PostgreSQL: the databases
and the uploads come back, the stale files of the volume are gone, and a damaged set leaves the volume untouched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import psycopg
import pytest
import yaml
from tests.chart.test_backup_s3 import (  # noqa: F401  (s3: the moto fixture)
    BUCKET,
    CRYPT,
    INTEGRITY,
    PASSPHRASE,
    PREFIX,
    S3_VALUES,
    SECRET,
    _rclone,
    s3,
)
from tests.support.backup import HMAC_KEY, Release, drop, fake_release, ragdb_init
from tests.support.backup import run_script as _run
from tests.support.chart import EXAMPLES, KUBE_VERSIONS, NAMESPACE, RELEASE, example_values, one, render
from tests.support.paths import REPO

from ragfr_tools.restore_job import RestoreJobError, restore_job

STAMP = "20261201T023000Z"
BACKUP = {"backup": {"enabled": True}}
S3 = {"backup": {"enabled": True, "target": "s3",
                 "s3": {"endpoint": "https://s3.internal:9000", "bucket": "ragfr", "prefix": "nightly",
                        "existingSecret": "s3-keys", "encryption": {"existingSecret": "backup-crypt"}},
                 "integrity": {"existingSecret": "backup-integrity"}}}


def job_for(values: dict[str, Any]) -> dict[str, Any]:
    return restore_job(render(values), RELEASE, NAMESPACE, STAMP)


def containers(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = job["spec"]["template"]["spec"]
    return {c["name"]: c for c in spec.get("initContainers", []) + spec["containers"]}


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_the_restore_pod_needs_no_open_webui_pod() -> None:
    docs = render(BACKUP)
    cron_pod = one(docs, "CronJob", "-backup")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    # Why a Job of its own: the backup's pod follows a running Open WebUI pod (its ReadWriteOnce volume)...
    assert cron_pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    # ...and the restore runs while Open WebUI is scaled to 0: no pod to follow, it would stay Pending.
    spec = restore_job(docs, RELEASE, NAMESPACE, STAMP)["spec"]["template"]["spec"]
    assert "podAffinity" not in (spec.get("affinity") or {})
    assert spec["restartPolicy"] == "Never"


def test_only_the_open_webui_term_is_dropped() -> None:
    # The chart gives the backup pod no affinity of the operator's today; one added to the CronJob's pod (a future
    # value, a post-renderer) stays on the restore pod, only the term that follows Open WebUI goes.
    docs = render(BACKUP)
    cron_pod = one(docs, "CronJob", "-backup")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    zone = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}]}}
    near = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "scanner"}}}
    cron_pod["affinity"]["nodeAffinity"] = zone
    cron_pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"].append(near)
    spec = restore_job(docs, RELEASE, NAMESPACE, STAMP)["spec"]["template"]["spec"]
    assert spec["affinity"] == {"nodeAffinity": zone,
                                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [near]}}


def test_the_files_go_to_the_volume_the_backup_reads_as_open_webuis_user() -> None:
    docs = render(BACKUP)
    cron_pod = one(docs, "CronJob", "-backup")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    backup = next(c for c in cron_pod["containers"] if c["name"] == "backup")
    data_dir = env(backup)["DATA_DIR"]
    job = restore_job(docs, RELEASE, NAMESPACE, STAMP)
    got = containers(job)
    assert [c["name"] for c in job["spec"]["template"]["spec"]["initContainers"]] == ["restore-databases"]
    files = got["restore-files"]
    assert env(files)["DATA_DIR"] == data_dir == "/openwebui-data"
    assert env(files)["RESTORE_WIPE_DATA_DIR"] == "1" and env(files)["RESTORE_ONLY"] == "files"
    mount = next(m for m in files["volumeMounts"] if m["mountPath"] == data_dir)
    assert mount["name"] == "openwebui-data" and mount["readOnly"] is False
    volume = next(v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "openwebui-data")
    assert volume["persistentVolumeClaim"] == {"claimName": "ragfr-openwebui-data", "readOnly": False}
    # The stock Open WebUI image runs as root and owns its files; ragdb's uid 999 could not delete them.
    assert files["securityContext"]["runAsUser"] == 0
    assert files["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    databases = got["restore-databases"]
    assert env(databases)["RESTORE_ONLY"] == "databases" and "DATA_DIR" not in env(databases)
    assert env(databases)["RESTORE_SET"] == env(files)["RESTORE_SET"] == f"/backup/{STAMP}"
    assert "runAsUser" not in databases["securityContext"]  # ragdb's, from the pod


def test_a_non_root_open_webui_gets_a_non_root_restore() -> None:
    files = containers(job_for({**BACKUP, "openwebui": {"podSecurityContext": {"runAsUser": 1000, "runAsGroup": 1000,
                                                                                "fsGroup": 1000}}}))["restore-files"]
    assert files["securityContext"]["runAsUser"] == 1000 and files["securityContext"]["runAsNonRoot"] is True
    assert files["securityContext"]["runAsGroup"] == 1000


def test_an_s3_set_is_fetched_first_with_the_upload_containers_env() -> None:
    docs = render(S3)
    upload = next(c for c in one(docs, "CronJob", "-backup")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
                  ["containers"] if c["name"] == "upload")
    job = restore_job(docs, RELEASE, NAMESPACE, STAMP)
    init = job["spec"]["template"]["spec"]["initContainers"]
    assert [c["name"] for c in init] == ["fetch", "restore-databases"]
    fetch = init[0]
    assert fetch["command"] == ["/bin/sh", "/ragfr-backup/backup-fetch-s3.sh"]
    assert set(env(upload)) - {"BACKUP_KEEP"} <= set(env(fetch))
    assert env(fetch)["RESTORE_STAMP"] == STAMP and env(fetch)["BACKUP_DIR"] == "/backup"
    assert next(m for m in fetch["volumeMounts"] if m["name"] == "backup")["readOnly"] is False
    assert "backup-fetch-s3.sh" in one(docs, "ConfigMap", "-backup")["data"]


@pytest.mark.parametrize("values", [BACKUP, S3], ids=["pvc", "s3"])
def test_the_job_is_a_valid_kubernetes_object(values: dict[str, Any]) -> None:
    job = job_for(values)
    for version in KUBE_VERSIONS:
        kubernetes_validate.validate(job, version, strict=True)


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_with_backups_gives_a_valid_job(example: str) -> None:
    # Database TLS (a CA mount), CloudNativePG, a registry, pull Secrets...: the Job follows whatever the CronJob has.
    values = example_values(example)
    if not (values.get("backup") or {}).get("enabled"):
        values = {**values, "backup": {**(values.get("backup") or {}), "enabled": True}}
    job = job_for(values)
    kubernetes_validate.validate(job, KUBE_VERSIONS[-1], strict=True)
    spec = job["spec"]["template"]["spec"]
    assert "podAffinity" not in (spec.get("affinity") or {})
    names = [c["name"] for c in spec["initContainers"] + spec["containers"]]
    assert names[-2:] == ["restore-databases", "restore-files"], names


def test_values_without_backups_give_no_job() -> None:
    with pytest.raises(RestoreJobError, match="backup.enabled is false"):
        job_for({})


def test_make_restore_job_prints_the_job_of_the_operators_values(tmp_path: Path) -> None:
    my_values = tmp_path / "my-values.yaml"
    my_values.write_text(yaml.safe_dump({"global": {"imageSource": "imported"}, **BACKUP}))
    done = subprocess.run(["make", "-s", "-C", str(REPO), "restore-job", f"VALUES={my_values}", f"SET={STAMP}",
                           f"PY={sys.executable}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (job,) = [d for d in yaml.safe_load_all(done.stdout) if d]
    assert job["kind"] == "Job" and job["metadata"]["name"] == f"ragfr-restore-{STAMP.lower()}"
    bad = subprocess.run(["make", "-s", "-C", str(REPO), "restore-job", f"VALUES={my_values}", "SET=latest",
                          f"PY={sys.executable}"], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0
    assert bad.stderr.splitlines()[0].startswith("restore-job: SET='latest' is not a set's stamp"), bad.stderr


# --- the Job run for real ------------------------------------------------------------------------------------


@pytest.fixture
def release(pg_dsn: str, tmp_path: Path) -> Any:
    with fake_release(pg_dsn, tmp_path, url_syntax_passwords=True) as rel:
        yield rel


def local_env(container: dict[str, Any], mounts: dict[str, Path], secrets: dict[str, str]) -> dict[str, str]:
    """A container's env as rendered, on this machine: its mount paths onto `mounts`, its secretKeyRefs (and the
    database URLs, which name the release's Service) from `secrets`, by variable name."""
    given = {}
    for e in container["env"]:
        given[e["name"]] = local(e["value"], mounts) if "value" in e else secrets[e["name"]]
    given.update({k: v for k, v in secrets.items() if k.endswith("_DATABASE_URL") and k in given})
    return given


def local(text: str, mounts: dict[str, Path]) -> str:
    for path, target in sorted(mounts.items(), key=lambda kv: -len(kv[0])):
        if text == path or text.startswith(path + "/"):
            return str(target) + text[len(path):]
    return text


def run_container(container: dict[str, Any], mounts: dict[str, Path], secrets: dict[str, str],
                  tmp: Path, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _run([local(a, mounts) for a in container["command"]],
                {**local_env(container, mounts, secrets), "TMPDIR": str(tmp), **(extra or {})})


def _backup(release: Release, tmp_path: Path, scripts: Path) -> Path:
    """One set of `release`, by backup.sh as the CronJob runs it (its env, mapped), named STAMP."""
    cron = one(render(BACKUP), "CronJob", "-backup")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    backup = next(c for c in cron["containers"] if c["name"] == "backup")
    backups = tmp_path / "backups"
    backups.mkdir()
    done = run_container(backup, {"/backup": backups, "/openwebui-data": release.data_dir, "/ragfr-backup": scripts},
                         _secrets(release), tmp_path)
    assert done.returncode == 0, done.stderr
    (written,) = [p for p in backups.iterdir() if not p.name.startswith(".")]
    # backup.sh names the set after the clock and signs that name: run as the Job would for that set.
    return written


def _secrets(release: Release) -> dict[str, str]:
    """The Secrets' values, and the fake release's password-less URLs (the chart's point at its Service)."""
    return {"RAGFR_DB_PASSWORD": release.passwords["ragfr"], "OPENWEBUI_DB_PASSWORD": release.passwords["owui"],
            "BACKUP_HMAC_KEY": HMAC_KEY,
            "RAGFR_DATABASE_URL": release.ragfr_bare_url, "OPENWEBUI_DATABASE_URL": release.owui_bare_url}


def _scripts(tmp_path: Path) -> Path:
    scripts = tmp_path / "ragfr-backup"
    scripts.mkdir()
    for name, text in one(render(BACKUP), "ConfigMap", "-backup")["data"].items():
        (scripts / name).write_text(text)
    return scripts


def test_the_job_restores_the_databases_then_replaces_the_files(release: Release, tmp_path: Path) -> None:
    scripts = _scripts(tmp_path)
    with psycopg.connect(release.owui_url) as conn:  # STAND-IN for Open WebUI's schema (test_backup_restore.py)
        conn.execute("CREATE TABLE chat (id text PRIMARY KEY, title text)")
        conn.execute("INSERT INTO chat VALUES ('c1', 'Sinistres')")
    (release.data_dir / "uploads").mkdir(parents=True)
    (release.data_dir / "uploads" / "contrat.md").write_text("Le délai de déclaration est de cinq jours.")
    set_dir = _backup(release, tmp_path, scripts)

    # After the backup: the state a restore replaces. New rows, a new upload, a changed one, a hidden file.
    with psycopg.connect(release.owui_url) as conn:
        conn.execute("INSERT INTO chat VALUES ('c2', 'après la sauvegarde')")
    (release.data_dir / "uploads" / "contrat.md").write_text("modifié")
    (release.data_dir / "uploads" / "nouveau.md").write_text("après la sauvegarde")
    (release.data_dir / ".webui_secret_key").write_text("x")
    drop(release)  # runbook step 2: fresh databases, like ragdb's first boot
    ragdb_init(release)

    job = restore_job(render(BACKUP), RELEASE, NAMESPACE, set_dir.name)
    mounts = {"/backup": set_dir.parent, "/openwebui-data": release.data_dir, "/ragfr-backup": scripts}
    spec = job["spec"]["template"]["spec"]
    for container in spec["initContainers"] + spec["containers"]:  # init containers in order, then the main one
        done = run_container(container, mounts, _secrets(release), tmp_path)
        assert done.returncode == 0, (container["name"], done.stderr)
    with psycopg.connect(release.owui_url) as conn:
        assert conn.execute("SELECT id FROM chat ORDER BY id").fetchall() == [("c1",)]
    assert sorted(str(p.relative_to(release.data_dir)) for p in release.data_dir.rglob("*")) == [
        "uploads", "uploads/contrat.md"]
    assert (release.data_dir / "uploads" / "contrat.md").read_text() == "Le délai de déclaration est de cinq jours."


def test_a_refused_set_leaves_the_volume_as_it_was(release: Release, tmp_path: Path) -> None:
    scripts = _scripts(tmp_path)
    release.data_dir.mkdir()
    (release.data_dir / "kept.md").write_text("avant")
    set_dir = _backup(release, tmp_path, scripts)
    (set_dir / "openwebui-data.tar.gz").write_bytes(b"altered")
    job = restore_job(render(BACKUP), RELEASE, NAMESPACE, set_dir.name)
    mounts = {"/backup": set_dir.parent, "/openwebui-data": release.data_dir, "/ragfr-backup": scripts}
    # The files container verifies the set itself before it empties anything (even run alone).
    files = job["spec"]["template"]["spec"]["containers"][0]
    done = run_container(files, mounts, _secrets(release), tmp_path)
    assert done.returncode == 1
    assert "openwebui-data.tar.gz does not match its SHA-256" in done.stderr, done.stderr
    assert [p.name for p in release.data_dir.iterdir()] == ["kept.md"]


# --- from S3: fetched, decrypted, restored -----------------------------------------------------------------------


@pytest.mark.parametrize("encrypted", [True, False], ids=["encrypted", "in-clear"])
def test_the_job_restores_a_set_from_the_bucket(release: Release, s3: str, tmp_path: Path,  # noqa: F811
                                                encrypted: bool) -> None:
    # The S3 server is moto's, a protocol double (tests/chart/test_backup_s3.py); rclone and the scripts are real.
    scripts = _scripts(tmp_path)
    encryption = {"existingSecret": CRYPT["metadata"]["name"]} if encrypted else {"enabled": False}
    values = {"backup": {"enabled": True, "target": "s3",
                         "integrity": {"existingSecret": INTEGRITY["metadata"]["name"]},
                         "s3": {**S3_VALUES, "endpoint": s3, "insecureEndpoint": True, "encryption": encryption}}}
    docs = render(values)
    secrets = {**_secrets(release), "BACKUP_CRYPT_PASSPHRASE": PASSPHRASE,
               "RCLONE_CONFIG_TARGET_ACCESS_KEY_ID": SECRET["stringData"]["access-key-id"],
               "RCLONE_CONFIG_TARGET_SECRET_ACCESS_KEY": SECRET["stringData"]["secret-access-key"]}
    home = tmp_path / "tmp"
    home.mkdir()
    cron = one(docs, "CronJob", "-backup")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (upload,) = cron["containers"]
    made = _rclone(local_env(upload, {"/tmp": home}, secrets), "mkdir", f"target:{BUCKET}")
    assert made.returncode == 0, made.stderr
    with psycopg.connect(release.owui_url) as conn:
        conn.execute("CREATE TABLE chat (id text PRIMARY KEY, title text)")
        conn.execute("INSERT INTO chat VALUES ('c1', 'Sinistres')")
    (release.data_dir / "uploads").mkdir(parents=True)
    (release.data_dir / "uploads" / "contrat.md").write_text("cinq jours")
    scratch = tmp_path / "cron-emptydir"
    scratch.mkdir()
    mounts = {"/backup": scratch, "/openwebui-data": release.data_dir, "/ragfr-backup": scripts, "/tmp": home}
    for container in cron["initContainers"] + cron["containers"]:  # backup, then upload
        # The upload script reads /backup by default (no BACKUP_DIR in its env): that default, mapped here.
        done = run_container(container, mounts, secrets, tmp_path, {"BACKUP_DIR": str(scratch)})
        assert done.returncode == 0, (container["name"], done.stderr)
    (stamp,) = [p.name for p in scratch.iterdir()]

    drop(release)
    ragdb_init(release)
    (release.data_dir / "uploads" / "contrat.md").write_text("modifié")
    job = restore_job(docs, RELEASE, NAMESPACE, stamp)
    spec = job["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["fetch", "restore-databases"]
    pod_emptydir = tmp_path / "restore-emptydir"  # the Job's own /backup: an empty scratch volume
    pod_emptydir.mkdir()
    mounts = {**mounts, "/backup": pod_emptydir}
    for container in spec["initContainers"] + spec["containers"]:
        done = run_container(container, mounts, secrets, tmp_path)
        assert done.returncode == 0, (container["name"], done.stderr)
        if container["name"] == "fetch":
            how = "decrypted" if encrypted else "in clear"
            assert f"backup-fetch: {BUCKET}/{PREFIX}/{stamp}/ -> {pod_emptydir}/{stamp}/ ({how})" in done.stdout
    with psycopg.connect(release.owui_url) as conn:
        assert conn.execute("SELECT id FROM chat").fetchall() == [("c1",)]
    assert (release.data_dir / "uploads" / "contrat.md").read_text() == "cinq jours"

    # A stamp the bucket does not hold as a complete set: one line, nothing fetched.
    job = restore_job(docs, RELEASE, NAMESPACE, "20200101T000000Z")
    missing = run_container(job["spec"]["template"]["spec"]["initContainers"][0], mounts, secrets, tmp_path)
    assert missing.returncode == 1
    assert missing.stderr.strip() == (f"backup-fetch: {BUCKET}/{PREFIX}/20200101T000000Z/ holds no complete set (no "
                                      "SHA256SUMS: absent, or an interrupted upload); list the sets with rclone lsf "
                                      "--dirs-only")
