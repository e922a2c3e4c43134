"""Two checks of the doc walk (tests/docs/test_install_walk.py) that need more than the release as last rendered
(issue 48, the second month):

- the upgrade that adds a migration: the chart rendered from the checkout as it is, and from a copy of it with one
  more file in migrations/, must name another migrations Job (a Job keeps its name, so `helm upgrade` keeps the
  completed one and the new migration never runs);
- the restore pod: it must be schedulable while the walk has Open WebUI scaled to 0 (a required podAffinity to a
  pod that no longer runs leaves it Pending), and every path it writes or deletes under must be a writable mount of
  Open WebUI's data claim or of another volume of the pod (an unmounted path is the container's own filesystem:
  the data volume is left as it was).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml
from tests.support.chart import NAMESPACE, RELEASE

Doc = dict[str, Any]
PROBE = "9999_walk_probe.sql"
# Open WebUI's own default when DATA_DIR is not in its environment.
OPENWEBUI_DEFAULT_DATA_DIR = "/app/backend/data"


def checkout_copy(checkout: Path, into: Path) -> Path:
    """charts/ragfr and migrations/ of `checkout` under `into`, the chart's links (files/migrations,
    the patch manifest) still pointing where they point in a checkout. Returns the copied chart."""
    chart = checkout / "charts" / "ragfr"
    shutil.copytree(chart, into / "charts" / "ragfr", symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(checkout / "migrations", into / "migrations")
    for link in (p for p in chart.rglob("*") if p.is_symlink()):
        target = link.resolve().relative_to(checkout.resolve())
        dest = into / target
        if dest.exists():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if link.resolve().is_dir() else shutil.copy)(link.resolve(), dest)
    return into / "charts" / "ragfr"


def migrations_job_names(chart_dir: Path, values: dict[str, Any]) -> list[str]:
    """The migrations Jobs an upgrade with these values renders (component label `migrate`)."""
    out = helm.Chart.load(chart_dir).render(values, name=RELEASE, namespace=NAMESPACE, revision=2,
                                            is_install=False)
    return sorted(d["metadata"]["name"] for k, t in out.items() if not k.endswith("NOTES.txt")
                  for d in yaml.load_all(t, Loader=yaml.CSafeLoader) if d and d.get("kind") == "Job"
                  and d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "migrate")


def migration_probe(checkout: Path, values: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(migrations Jobs of the checkout's chart, the same with migrations/9999_walk_probe.sql added)."""
    got = _migration_probe(checkout, json.dumps(values, sort_keys=True))
    return list(got[0]), list(got[1])


@cache
def _migration_probe(checkout: Path, values_json: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    # The walk's paths reach the upgrade with the same values: the chart is copied and rendered once for them.
    values = json.loads(values_json)
    before = migrations_job_names(checkout / "charts" / "ragfr", values)
    with tempfile.TemporaryDirectory(prefix="walk-probe-") as tmp:
        chart = checkout_copy(checkout, Path(tmp))
        (Path(tmp) / "migrations" / PROBE).write_text("-- the doc walk's probe: a migration that changes nothing\n"
                                                      "SELECT 1;\n")
        after = migrations_job_names(chart, values)
    return tuple(before), tuple(after)


# --- the restore pod ---------------------------------------------------------------------------------------------

def selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels, matchExpressions) against a pod's labels."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values") or []
        if (op == "In" and labels.get(key) not in values) or (op == "NotIn" and labels.get(key) in values) \
                or (op == "Exists" and key not in labels) or (op == "DoesNotExist" and key in labels):
            return False
    return True


def running_pods(objects: Iterable[Doc], replicas: dict[str, int]) -> Iterator[tuple[str, dict[str, str]]]:
    """(workload, pod labels) of every Deployment or StatefulSet with at least one replica, after the walk's
    `kubectl scale` (workload name -> replicas)."""
    for d in objects:
        if d["kind"] in ("Deployment", "StatefulSet"):
            name = d["metadata"]["name"]
            if replicas.get(name, d["spec"].get("replicas", 1)) > 0:
                yield name, d["spec"]["template"]["metadata"].get("labels", {})


def unschedulable(pod: Doc, objects: list[Doc], replicas: dict[str, int]) -> list[str]:
    """The pod's required podAffinity terms that no running pod of the release satisfies (the pod stays Pending).
    Terms naming other namespaces are not judged: the release does not say what runs there."""
    terms = (((pod.get("affinity") or {}).get("podAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    running = list(running_pods(objects, replicas))
    out = []
    for t in terms:
        if t.get("namespaces") or t.get("namespaceSelector") is not None:
            continue
        selector = t.get("labelSelector") or {}
        if not any(selector_matches(selector, labels) for _, labels in running):
            stopped = sorted(d["metadata"]["name"] for d in objects if d["kind"] in ("Deployment", "StatefulSet")
                             and selector_matches(selector, d["spec"]["template"]["metadata"].get("labels", {})))
            out.append(f"requires (podAffinity, {t.get('topologyKey')}) a pod matching "
                       f"{selector.get('matchLabels') or selector}: none runs "
                       f"({', '.join(stopped) or 'no workload of the release'} scaled to 0)")
    return out


def _env(container: Doc, objects: list[Doc]) -> dict[str, str]:
    env: dict[str, str] = {}
    for src in container.get("envFrom") or []:
        name = (src.get("configMapRef") or {}).get("name")
        cm = next((d for d in objects if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name), None)
        env.update({str(k): str(v) for k, v in ((cm or {}).get("data") or {}).items()})
    env.update({e["name"]: str(e["value"]) for e in container.get("env") or [] if "value" in e})
    return env


def _mount_of(container: Doc, path: str) -> Doc | None:
    """The mount a path lies under (the deepest), or None: the container's own filesystem."""
    found = [m for m in container.get("volumeMounts") or []
             if path == m["mountPath"] or path.startswith(m["mountPath"].rstrip("/") + "/")]
    return max(found, key=lambda m: len(m["mountPath"])) if found else None


def _claim(pod: Doc, volume: str) -> str | None:
    v: Doc = next((v for v in pod.get("volumes") or [] if v["name"] == volume), {})
    return (v.get("persistentVolumeClaim") or {}).get("claimName")


def openwebui_data_claims(objects: list[Doc]) -> set[str]:
    """The claims Open WebUI's Deployment mounts at its DATA_DIR (its uploads)."""
    claims = set()
    for d in objects:
        if d["kind"] != "Deployment" or d["spec"]["template"]["metadata"].get("labels", {}).get(
                "app.kubernetes.io/component") != "openwebui":
            continue
        pod = d["spec"]["template"]["spec"]
        for c in pod["containers"]:
            data_dir = _env(c, objects).get("DATA_DIR", OPENWEBUI_DEFAULT_DATA_DIR)
            mount = _mount_of(c, data_dir)
            claim = _claim(pod, mount["name"]) if mount else None
            if claim:
                claims.add(claim)
    return claims


def restore_writes(pod: Doc, objects: list[Doc]) -> list[tuple[str, str]]:
    """(container, path) the chart's restore.sh unpacks Open WebUI's uploads into in this pod: DATA_DIR of each
    container that runs it for the files (RESTORE_ONLY other than `databases`)."""
    out = []
    for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
        if not any("restore.sh" in str(a) for a in (c.get("command") or []) + (c.get("args") or [])):
            continue
        env = _env(c, objects)
        if env.get("RESTORE_ONLY") != "databases" and env.get("DATA_DIR"):
            out.append((c["name"], env["DATA_DIR"]))
    return out


def _writable(pod: Doc, mount: Doc) -> bool:
    volume: Doc = next((v for v in pod.get("volumes") or [] if v["name"] == mount["name"]), {})
    return not mount.get("readOnly") and not (volume.get("persistentVolumeClaim") or {}).get("readOnly")


def write_problems(pod: Doc, objects: list[Doc], data: list[tuple[str, str]], wipes: list[str]) -> list[str]:
    """`data`: (container, path) where the uploads are unpacked: a writable mount of Open WebUI's data claim.
    `wipes`: paths the page deletes under from the pod (any container): a writable mount. The pod must mount
    the claim Open WebUI's Deployment keeps its data on, and write there."""
    containers = (pod.get("initContainers") or []) + (pod.get("containers") or [])
    data_claims = openwebui_data_claims(objects)
    mounted = {c for v in pod.get("volumes") or [] for c in [(v.get("persistentVolumeClaim") or {}).get("claimName")]
               if c}
    out = []
    if not data_claims <= mounted:
        out.append(f"does not mount Open WebUI's data claim {sorted(data_claims - mounted)} (it mounts "
                   f"{sorted(mounted)})")
    if not data:
        out.append("unpacks the uploads nowhere the walk can see (no restore.sh with DATA_DIR)")
    targets: list[tuple[str | None, str, bool]] = [(c, p, True) for c, p in data] + [(None, p, False) for p in wipes]
    for who, path, uploads in targets:
        base = path.split("*", 1)[0].rstrip("/") or "/"
        mounts = [(c, m) for c in containers if who is None or c["name"] == who for m in [_mount_of(c, base)] if m]
        verb = f"unpacks the uploads into {path}" if uploads else f"deletes under {path}"
        if not mounts:
            out.append(f"{verb}, which no volume of the pod mounts (the container's own filesystem: Open WebUI's "
                       f"data, on {sorted(data_claims)}, is left as it was)")
        elif not any(_writable(pod, m) for _, m in mounts):
            out.append(f"{verb}, mounted read-only ({mounts[0][1]['name']})")
        elif uploads and not {_claim(pod, m["name"]) for _, m in mounts} & data_claims:
            claims = sorted(str(_claim(pod, m["name"])) for _, m in mounts)
            out.append(f"{verb}, on {claims}, not on Open WebUI's data claim {sorted(data_claims)}")
    return out


def restore_pod_problems(pod: Doc, objects: list[Doc], replicas: dict[str, int], wipes: list[str]) -> list[str]:
    """What keeps the restore pod from running, or from restoring Open WebUI's data where Open WebUI reads it."""
    return unschedulable(pod, objects, replicas) + write_problems(pod, objects, restore_writes(pod, objects), wipes)
