"""Kubernetes pod specs, as `helm template` renders them, translated into `podman run` command lines.

The cluster smoke (`make cluster-smoke`) runs the chart's workloads on a machine with podman and no Kubernetes.
Everything it runs passes through here, so what differs from a kubelet is written down in ONE place:
`DEVIATIONS` is the list the tests and docs/reference/testing.md repeat. Pure functions only: nothing here runs podman.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Manifest = dict[str, Any]

# Every way this translation is not a kubelet. Keep in step with docs/reference/testing.md ("What the cluster smoke
# does not prove") and tests/tools/test_kubesim.py, which asserts the list is documented.
DEVIATIONS: tuple[str, ...] = (
    "Service names resolve through --add-host entries pointing at the selected pod's IP (no cluster DNS, no "
    "kube-proxy, one pod per Service).",
    "NetworkPolicies are not enforced (podman's bridge lets every pod reach every other).",
    "emptyDir volumes are host directories created empty with mode 0777 (a kubelet's emptyDir mode); "
    "medium: Memory is a tmpfs of sizeLimit in the one container that mounts it; one that several containers "
    "mount (Open WebUI's db-credentials) is a host directory they share, with no size limit.",
    "A PersistentVolumeClaim is a podman named volume (nocopy) whose root belongs to the pod's fsGroup "
    "(setgid, group-writable), which is what a kubelet does for volumes supporting ownership management.",
    "fsGroup is added as a supplementary group of every container; runAsGroup defaults to 0 when unset.",
    "resources (requests and limits) are not applied.",
    "Jobs run their pod once: restartPolicy OnFailure and backoffLimit retries are not repeated; the first "
    "failure fails the smoke with the container's last log lines.",
    "Deployments and StatefulSets run one replica; strategy, PodDisruptionBudgets and helm hooks' ordering "
    "are not modelled (the smoke starts workloads in Kubernetes' dependency order itself).",
    "Probes: startupProbe/readinessProbe are polled once the containers start (httpGet from the host to the "
    "pod IP, exec through podman exec); livenessProbe is not run.",
    "Images are looked up in local podman storage only (pull policy Never); a rendered reference may be "
    "mapped to a stand-in image, each such mapping named by the smoke.",
)

_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class TranslationError(ValueError):
    """The rendered object uses something this translation does not support; the message names it."""


def expand(value: str, env: Mapping[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: defined variables are replaced, `$$` is a literal `$`, unknown stay as is."""

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)

    return _VAR.sub(sub, value)


@dataclass(frozen=True)
class Volume:
    """A pod volume: kind is emptyDir, configMap, secret or persistentVolumeClaim."""

    name: str
    kind: str
    ref: str = ""  # ConfigMap/Secret name or claim name
    files: Mapping[str, str] = field(default_factory=dict)  # configMap/secret contents, decoded
    mode: int = 0o644
    memory: bool = False
    size_limit: str = ""


@dataclass(frozen=True)
class Mount:
    volume: str
    path: str
    sub_path: str = ""
    read_only: bool = False


@dataclass(frozen=True)
class Container:
    name: str
    image: str
    command: tuple[str, ...] | None  # None: the image's ENTRYPOINT
    args: tuple[str, ...] | None  # None: the image's CMD (only when command is None too)
    env: tuple[tuple[str, str], ...]
    user: int | None
    group: int | None
    supplementary_groups: tuple[int, ...]
    read_only_root: bool
    cap_drop: tuple[str, ...]
    cap_add: tuple[str, ...]
    no_new_privileges: bool
    mounts: tuple[Mount, ...]
    ports: Mapping[str, int]  # name (or str(number)) -> containerPort
    startup_probe: Mapping[str, Any] | None
    readiness_probe: Mapping[str, Any] | None


@dataclass(frozen=True)
class Pod:
    """One pod of a workload: what the kubelet would run, in order (init containers first)."""

    workload: str  # "<Kind>/<name>"
    name: str
    labels: Mapping[str, str]
    init_containers: tuple[Container, ...]
    containers: tuple[Container, ...]
    volumes: Mapping[str, Volume]
    fs_group: int | None


def index(manifests: Sequence[Manifest]) -> dict[tuple[str, str], Manifest]:
    return {(m["kind"], m["metadata"]["name"]): m for m in manifests if m}


def _config_data(objects: Mapping[tuple[str, str], Manifest], kind: str, name: str) -> dict[str, str]:
    obj = objects.get((kind, name))
    if obj is None:
        raise TranslationError(f"{kind} {name!r} is referenced but not rendered")
    if kind == "Secret":
        data = {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
        data.update(obj.get("stringData") or {})
        return data
    return dict(obj.get("data") or {})


def _env(spec: Mapping[str, Any], objects: Mapping[tuple[str, str], Manifest], where: str) -> list[tuple[str, str]]:
    """envFrom first, then env in order, each value expanded against the variables defined before it."""
    values: dict[str, str] = {}
    for source in spec.get("envFrom") or []:
        if "configMapRef" in source:
            values.update(_config_data(objects, "ConfigMap", source["configMapRef"]["name"]))
        elif "secretRef" in source:
            values.update(_config_data(objects, "Secret", source["secretRef"]["name"]))
        else:
            raise TranslationError(f"{where}: unsupported envFrom {source}")
    for item in spec.get("env") or []:
        name = item["name"]
        if "value" in item:
            values[name] = expand(str(item["value"]), values)
        elif "secretKeyRef" in item.get("valueFrom", {}):
            ref = item["valueFrom"]["secretKeyRef"]
            data = _config_data(objects, "Secret", ref["name"])
            if ref["key"] not in data:
                raise TranslationError(f"{where}: Secret {ref['name']!r} has no key {ref['key']!r}")
            values[name] = data[ref["key"]]
        elif "configMapKeyRef" in item.get("valueFrom", {}):
            ref = item["valueFrom"]["configMapKeyRef"]
            data = _config_data(objects, "ConfigMap", ref["name"])
            if ref["key"] not in data:
                raise TranslationError(f"{where}: ConfigMap {ref['name']!r} has no key {ref['key']!r}")
            values[name] = data[ref["key"]]
        else:
            raise TranslationError(f"{where}: unsupported env source for {name}: {item}")
    return list(values.items())


def _projected(source: Mapping[str, Any], data: dict[str, str], where: str) -> dict[str, str]:
    """The files of a configMap/secret volume: every key, or only its `items` (key -> path), as the kubelet."""
    items = source.get("items")
    if not items:
        return data
    missing = [i["key"] for i in items if i["key"] not in data]
    if missing:
        raise TranslationError(f"{where}: volume items name keys the object lacks: {missing}")
    return {i["path"]: data[i["key"]] for i in items}


def _volumes(pod_spec: Mapping[str, Any], claim_templates: Sequence[Manifest], workload_name: str,
             objects: Mapping[tuple[str, str], Manifest], where: str) -> dict[str, Volume]:
    out: dict[str, Volume] = {}
    for v in pod_spec.get("volumes") or []:
        name = v["name"]
        if "emptyDir" in v:
            ed = v["emptyDir"] or {}
            out[name] = Volume(name, "emptyDir", memory=ed.get("medium") == "Memory",
                               size_limit=str(ed.get("sizeLimit", "")))
        elif "configMap" in v:
            ref = v["configMap"]["name"]
            out[name] = Volume(name, "configMap", ref, _config_data(objects, "ConfigMap", ref),
                               int(v["configMap"].get("defaultMode", 0o644)))
        elif "secret" in v:
            ref = v["secret"]["secretName"]
            files = _projected(v["secret"], _config_data(objects, "Secret", ref), where)
            out[name] = Volume(name, "secret", ref, files, int(v["secret"].get("defaultMode", 0o644)))
        elif "persistentVolumeClaim" in v:
            out[name] = Volume(name, "persistentVolumeClaim", v["persistentVolumeClaim"]["claimName"])
        else:
            raise TranslationError(f"{where}: unsupported volume {name}: {sorted(v)}")
    # A StatefulSet's claim for ordinal 0 is named <template>-<statefulset>-0.
    for t in claim_templates:
        name = t["metadata"]["name"]
        out[name] = Volume(name, "persistentVolumeClaim", f"{name}-{workload_name}-0")
    return out


def _container(spec: Mapping[str, Any], pod_security: Mapping[str, Any],
               objects: Mapping[tuple[str, str], Manifest], where: str) -> Container:
    sc = spec.get("securityContext") or {}
    env = _env(spec, objects, f"{where} container {spec['name']}")
    env_map = dict(env)
    command = spec.get("command")
    args = spec.get("args")
    fs_group = pod_security.get("fsGroup")
    caps = sc.get("capabilities") or {}
    return Container(
        name=spec["name"],
        image=spec["image"],
        command=tuple(expand(str(c), env_map) for c in command) if command is not None else None,
        args=tuple(expand(str(a), env_map) for a in args) if args is not None else None,
        env=tuple(env),
        user=sc.get("runAsUser", pod_security.get("runAsUser")),
        group=sc.get("runAsGroup", pod_security.get("runAsGroup")),
        supplementary_groups=tuple([fs_group] if fs_group is not None else []),
        read_only_root=bool(sc.get("readOnlyRootFilesystem", False)),
        cap_drop=tuple(caps.get("drop") or []),
        cap_add=tuple(caps.get("add") or []),
        no_new_privileges=sc.get("allowPrivilegeEscalation") is False,
        mounts=tuple(Mount(m["name"], m["mountPath"], m.get("subPath", ""), bool(m.get("readOnly", False)))
                     for m in spec.get("volumeMounts") or []),
        ports={str(p.get("name", p["containerPort"])): int(p["containerPort"]) for p in spec.get("ports") or []},
        startup_probe=spec.get("startupProbe"),
        readiness_probe=spec.get("readinessProbe"),
    )


def pod_of(workload: Manifest, objects: Mapping[tuple[str, str], Manifest]) -> Pod:
    """The pod a Deployment, StatefulSet, Job, bare Pod or one run of a CronJob would run."""
    kind, name = workload["kind"], workload["metadata"]["name"]
    if kind == "Pod":
        template: Manifest = {"metadata": workload["metadata"], "spec": workload["spec"]}
    elif kind in ("Deployment", "StatefulSet", "Job"):
        template = workload["spec"]["template"]
    elif kind == "CronJob":
        template = workload["spec"]["jobTemplate"]["spec"]["template"]
    else:
        raise TranslationError(f"{kind}/{name} is not a workload")
    spec = template["spec"]
    security = spec.get("securityContext") or {}
    where = f"{kind}/{name}"
    claims = workload["spec"].get("volumeClaimTemplates") or [] if kind == "StatefulSet" else []
    volumes = _volumes(spec, claims, name, objects, where)
    for c in (spec.get("initContainers") or []) + spec["containers"]:
        for m in c.get("volumeMounts") or []:
            if m["name"] not in volumes:
                raise TranslationError(f"{where} container {c['name']}: mounts undefined volume {m['name']!r}")
    return Pod(
        workload=where,
        name=f"{name}-0" if kind == "StatefulSet" else name,
        labels=dict(template.get("metadata", {}).get("labels") or {}),
        init_containers=tuple(_container(c, security, objects, where) for c in spec.get("initContainers") or []),
        containers=tuple(_container(c, security, objects, where) for c in spec["containers"]),
        volumes=volumes,
        fs_group=security.get("fsGroup"),
    )


def service_targets(objects: Mapping[tuple[str, str], Manifest], pod: Pod) -> list[str]:
    """Names of the Services whose selector matches this pod's labels (what the pod is reachable as)."""
    names = []
    for (kind, name), obj in objects.items():
        selector = (obj.get("spec") or {}).get("selector") or {}
        if kind == "Service" and selector and all(pod.labels.get(k) == v for k, v in selector.items()):
            names.append(name)
    return sorted(names)


def size_bytes(quantity: str) -> int:
    """A Kubernetes quantity (Mi, Gi, M, G or plain bytes) in bytes."""
    units = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "K": 1000, "k": 1000, "M": 1000**2, "G": 1000**3}
    match = re.fullmatch(r"(\d+)([A-Za-z]*)", quantity.strip())
    if not match or match.group(2) not in {**units, "": 1}:
        raise TranslationError(f"unsupported quantity {quantity!r}")
    return int(match.group(1)) * units.get(match.group(2), 1)


def run_args(container: Container, *, pod_name: str, container_name: str, image: str,
             volume_paths: Mapping[str, str], claim_volumes: Mapping[str, str],
             volumes: Mapping[str, Volume], detach: bool) -> list[str]:
    """`podman run` arguments (after `podman run`) for one container of a pod created as `pod_name`.

    volume_paths: host directory of every emptyDir/configMap/secret volume; claim_volumes: podman volume name
    of every persistentVolumeClaim volume (by claim name).
    """
    argv = ["--pod", pod_name, "--name", container_name, "--pull", "never",
            # This machine's hard limits refuse podman's defaults (ENGINEERING-NOTES).
            "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096",
            # A kubelet ignores an image's VOLUME declarations: no anonymous volume appears.
            "--image-volume", "ignore"]
    if detach:
        argv.append("-d")
    if container.user is not None:
        argv += ["--user", f"{container.user}:{container.group if container.group is not None else 0}"]
    for g in container.supplementary_groups:
        argv += ["--group-add", str(g)]
    if container.read_only_root:
        # No extra tmpfs on /run, /tmp, /var/tmp: a kubelet mounts only what the pod spec lists.
        argv += ["--read-only", "--read-only-tmpfs=false"]
    for cap in container.cap_drop:
        argv += ["--cap-drop", cap]
    for cap in container.cap_add:
        argv += ["--cap-add", cap]
    if container.no_new_privileges:
        argv += ["--security-opt", "no-new-privileges"]
    for k, v in container.env:
        argv += ["--env", f"{k}={v}"]
    for m in container.mounts:
        vol = volumes[m.volume]
        ro = ",ro" if m.read_only else ""
        if vol.kind == "persistentVolumeClaim":
            if m.sub_path:
                raise TranslationError(f"{container_name}: subPath on a claim is not supported")
            # nocopy: a claim starts empty; podman would otherwise copy the image's files into a new volume.
            argv += ["--volume", f"{claim_volumes[vol.ref]}:{m.path}:nocopy{ro}"]
        elif vol.kind == "emptyDir" and vol.memory and m.volume not in volume_paths:
            size = f",tmpfs-size={size_bytes(vol.size_limit)}" if vol.size_limit else ""
            argv += ["--mount", f"type=tmpfs,destination={m.path},tmpfs-mode=1777{size}"]
        else:
            source = volume_paths[m.volume] + (f"/{m.sub_path}" if m.sub_path else "")
            argv += ["--mount", f"type=bind,source={source},destination={m.path}{ro}"]
    if container.command is not None:
        argv += ["--entrypoint", _entrypoint_json(container.command)]
    argv.append(image)
    if container.command is not None or container.args is not None:
        argv += list(container.args or ())
    return argv


def _entrypoint_json(command: Sequence[str]) -> str:
    import json

    return json.dumps(list(command))
