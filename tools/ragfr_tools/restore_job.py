"""`make restore-job`: the Job that restores one backup set into the running release (docs/runbooks/restore.md),
derived from the backup CronJob the operator's values render, so that it runs where and as the backup does:

    python -m ragfr_tools.restore_job RELEASE NAMESPACE STAMP VALUES.yaml [VALUES.yaml ...] | kubectl apply -f -

What differs from the CronJob's pod, and why:
- no required podAffinity to an Open WebUI pod: the restore runs with Open WebUI scaled to 0, when no such pod
  exists (with it the pod would stay Pending). A ReadWriteOnce data volume still lands on its node: local-path's
  PersistentVolume carries that node, and the scheduler honours it;
- `fetch` (S3 only, first): files/backup-fetch-s3.sh copies the set from the bucket into the pod's scratch volume,
  with the upload container's env (decrypting an encrypted set);
- `restore-databases`: restore.sh (RESTORE_ONLY=databases) as ragdb's user, with the backup container's database
  env: verifies the set, then restores both dumps;
- `restore-files`, last: restore.sh (RESTORE_ONLY=files) as Open WebUI's user, who owns the files: verifies the set
  again, empties the data volume at the path the CronJob mounts it (/openwebui-data) and unpacks the uploads. It
  runs only once the databases are restored, so a refused set leaves the volume untouched;
- the data volume mounted read-write; backoffLimit 0: a second attempt would meet restored databases and stop.
One line on stderr and exit 2 for bad arguments, 1 when the values render no backup CronJob or are refused.
"""

from __future__ import annotations

import copy
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ragfr_tools.chart_render import CHART
from ragfr_tools.deploy import load_values

Doc = dict[str, Any]
STAMP = re.compile(r"[0-9]{8}T[0-9]{6}Z")
DATA_VOLUME = "openwebui-data"
# Open WebUI's stock image runs as root (values.yaml, openwebui.podSecurityContext): its files are root's.
STOCK_OPENWEBUI_UID = 0


class RestoreJobError(Exception):
    """The values cannot give a restore Job (no backup CronJob, a refusal of the chart)."""


def _named(docs: list[Doc], kind: str, name: str) -> Doc | None:
    return next((d for d in docs if d.get("kind") == kind and d["metadata"]["name"] == name), None)


def _env(entries: list[dict[str, Any]], drop: set[str], add: dict[str, str]) -> list[dict[str, Any]]:
    kept = [copy.deepcopy(e) for e in entries if e["name"] not in drop and e["name"] not in add]
    return kept + [{"name": k, "value": v} for k, v in add.items()]


def _openwebui_user(docs: list[Doc], release: str) -> tuple[int, int | None]:
    """(uid, gid) of Open WebUI's container as the release runs it: the owner of the data volume's files."""
    deployment = _named(docs, "Deployment", f"{release}-openwebui")
    if deployment is None:
        return STOCK_OPENWEBUI_UID, None
    pod = deployment["spec"]["template"]["spec"]
    container = next(c for c in pod["containers"] if c["name"] == "open-webui")
    merged = {**(pod.get("securityContext") or {}), **(container.get("securityContext") or {})}
    return int(merged.get("runAsUser", STOCK_OPENWEBUI_UID)), merged.get("runAsGroup")


def restore_job(docs: list[Doc], release: str, namespace: str, stamp: str) -> Doc:
    """The restore Job of set `stamp`, from the objects the operator's values render."""
    cron = _named(docs, "CronJob", f"{release}-backup")
    if cron is None:
        raise RestoreJobError("these values render no backup CronJob (backup.enabled is false): the restore Job "
                              "is derived from it; restore with the values the backups were taken with")
    template = copy.deepcopy(cron["spec"]["jobTemplate"]["spec"]["template"])
    spec = template["spec"]
    template.get("metadata", {}).pop("annotations", None)

    openwebui = _named(docs, "Deployment", f"{release}-openwebui")
    selector = openwebui["spec"]["selector"]["matchLabels"] if openwebui else None
    affinity = spec.get("affinity") or {}
    pod_affinity = affinity.get("podAffinity") or {}
    key = "requiredDuringSchedulingIgnoredDuringExecution"
    terms = [t for t in pod_affinity.get(key, []) if (t.get("labelSelector") or {}).get("matchLabels") != selector]
    if terms:
        pod_affinity[key] = terms
    else:
        pod_affinity.pop(key, None)
    if not pod_affinity:
        affinity.pop("podAffinity", None)
    if not affinity:
        spec.pop("affinity", None)

    pods = spec.get("initContainers", []) + spec.get("containers", [])
    backup = next(c for c in pods if c["name"] == "backup")
    upload = next((c for c in pods if c["name"] == "upload"), None)
    mount = next(m["mountPath"] for m in backup["volumeMounts"] if m["name"] == DATA_VOLUME)
    backup_mount = next(m["mountPath"] for m in backup["volumeMounts"] if m["name"] == "backup")
    restore_set = f"{backup_mount}/{stamp}"

    databases = copy.deepcopy(backup)
    databases["name"] = "restore-databases"
    databases["command"] = ["/bin/sh", "/ragfr-backup/restore.sh"]
    databases["env"] = _env(backup["env"], {"BACKUP_DIR", "BACKUP_KEEP", "DATA_DIR"},
                            {"RESTORE_SET": restore_set, "RESTORE_ONLY": "databases"})
    databases["volumeMounts"] = [m for m in backup["volumeMounts"] if m["name"] != DATA_VOLUME]

    uid, gid = _openwebui_user(docs, release)
    files = copy.deepcopy(backup)
    files["name"] = "restore-files"
    files["command"] = ["/bin/sh", "/ragfr-backup/restore.sh"]
    files["env"] = _env([e for e in backup["env"] if e["name"] == "BACKUP_HMAC_KEY"], set(),
                        {"RESTORE_SET": restore_set, "RESTORE_ONLY": "files", "DATA_DIR": mount,
                         "RESTORE_WIPE_DATA_DIR": "1"})
    files["volumeMounts"] = [{**m, "readOnly": False} if m["name"] == DATA_VOLUME else m
                             for m in backup["volumeMounts"] if not m["name"].startswith("db-")]
    security = {"runAsUser": uid, "runAsNonRoot": uid != 0, "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    if gid is not None:
        security["runAsGroup"] = gid
    files["securityContext"] = {**(backup.get("securityContext") or {}), **security}

    init = [databases]
    if upload is not None:
        fetch = copy.deepcopy(upload)
        fetch["name"] = "fetch"
        fetch["command"] = ["/bin/sh", "/ragfr-backup/backup-fetch-s3.sh"]
        fetch["env"] = _env(upload["env"], {"BACKUP_KEEP"}, {"RESTORE_STAMP": stamp, "BACKUP_DIR": backup_mount})
        fetch["volumeMounts"] = [{**m, "readOnly": False} if m["name"] == "backup" else m
                                 for m in upload["volumeMounts"]]
        init.insert(0, fetch)
    spec["initContainers"] = init
    spec["containers"] = [files]
    spec["restartPolicy"] = "Never"
    for volume in spec["volumes"]:
        if volume["name"] == DATA_VOLUME:
            volume["persistentVolumeClaim"]["readOnly"] = False

    labels = {**cron["metadata"].get("labels", {}), "app.kubernetes.io/component": "restore"}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"{release}-restore-{stamp.lower()}", "namespace": namespace, "labels": labels},
            "spec": {"backoffLimit": 0, "template": template}}


def render_restore_job(values: dict[str, Any], release: str, namespace: str, stamp: str) -> Doc:
    import helm_python as helm  # 244 MB Go library: loaded only once the arguments are known good

    try:
        out = helm.Chart.load(CHART).render(values, name=release, namespace=namespace)
    except helm.HelmError as exc:
        lines = str(exc).strip().splitlines()
        raise RestoreJobError(f"the chart refuses these values: {lines[-1] if lines else exc}") from exc
    docs = [d for k, t in sorted(out.items()) if not k.endswith("NOTES.txt")
            for d in yaml.safe_load_all(t) if d]
    return restore_job(docs, release, namespace, stamp)


class _PlainDumper(yaml.SafeDumper):
    """No anchors: kubectl reads them, but an operator reading the manifest should not have to."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    release, namespace, stamp, *files = args
    if not STAMP.fullmatch(stamp):
        print(f"restore-job: SET={stamp!r} is not a set's stamp (e.g. 20261201T023000Z: its directory name)",
              file=sys.stderr)
        return 2
    for f in files:
        if not Path(f).is_file():
            print(f"restore-job: values file not found: {f}", file=sys.stderr)
            return 2
    try:
        job = render_restore_job(load_values(files), release, namespace, stamp)
    except RestoreJobError as exc:
        print(f"restore-job: {exc}", file=sys.stderr)
        return 1
    print(yaml.dump(job, Dumper=_PlainDumper, sort_keys=False), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
