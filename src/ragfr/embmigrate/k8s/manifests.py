"""The objects `ragfr embeddings k8s` creates for one run: a Job running `ragfr embeddings migrate`, and a
ServiceAccount/Role/RoleBinding allowed to patch exactly Open WebUI's ConfigMap and Deployment, owned by that
Job so that Kubernetes deletes them with it (`ttlSecondsAfterFinished`).

The Job borrows from the release's running Open WebUI Deployment rather than re-deriving the chart: the
`wait-for-schema` init container already runs the ragfr image with the password-less database URL and
PGPASSWORD from the chart's Secret (libpq reads it; no password is ever put into a URL), the pod labels
are what the chart's NetworkPolicies admit to ragdb and Ollama, and the
pod-level settings (pull secrets, node selection, tolerations, security context, resources) are what lets
a pod of this release start on this cluster at all (air-gapped registries, tainted nodes).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ragfr.embmigrate.k8s.openwebui import Release
from ragfr.embmigrate.settings import MigrationSettings
from ragfr.errors import ConfigError

SCHEMA_CONTAINER = "wait-for-schema"
# The chart's volume of the database CA (database.tls); the Job mounts it where wait-for-schema does.
CA_VOLUME = "db-ca"
NETWORK_LABELS = {"ragfr.io/db-client": "true", "ragfr.io/ollama-client": "true"}
TARGET_LABEL = "ragfr.io/embmigrate-target"
# A finished run (its Job, pod logs and RBAC objects) stays three days for `kubectl logs`, then goes.
TTL_SECONDS = 3 * 24 * 3600
# Pod-level fields copied from Open WebUI's pod: what decides where and whether a release's pod can start.
POD_FIELDS = ("imagePullSecrets", "nodeSelector", "tolerations", "affinity", "priorityClassName", "securityContext")


@dataclass(frozen=True, kw_only=True)
class JobRequest(MigrationSettings):
    namespace: str
    release: str

    @property
    def target(self) -> Release:
        return Release(self.namespace, self.release)

    @property
    def target_key(self) -> str:
        """Same target, same key: the label that finds a run of this migration still in progress."""
        return hashlib.sha256(f"{self.to}/{self.dims}".encode()).hexdigest()[:8]

    def job_name(self, run: str) -> str:
        # One Job per run: after a rollback, migrating again is a new run, never the old finished Job.
        return f"{self.release[:30]}-embmigrate-{self.target_key}-{run}"[:63].rstrip("-")


def migrate_args(req: JobRequest) -> list[str]:
    # No --dsn: ragfr reads DATABASE_URL from the environment, so the password never appears in argv.
    return ["embeddings", "migrate", *req.cli_args(),
            "--k8s-release", req.release, "--k8s-namespace", req.namespace]


def schema_container(deployment: dict[str, Any]) -> dict[str, Any]:
    spec = deployment.get("spec", {}).get("template", {}).get("spec", {})
    for c in spec.get("initContainers") or []:
        if c.get("name") == SCHEMA_CONTAINER:
            return dict(c)
    name = deployment.get("metadata", {}).get("name", "?")
    raise ConfigError(f"deployment {name} has no init container {SCHEMA_CONTAINER!r}: not a ragfr chart release?")


def ca_mounts(container: dict[str, Any]) -> list[dict[str, Any]]:
    """The database CA's mount (chart value database.tls): the borrowed DATABASE_URL names its file."""
    return [m for m in container.get("volumeMounts") or [] if m.get("name") == CA_VOLUME]


def labels(req: JobRequest) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "ragfr",
        "app.kubernetes.io/instance": req.release,
        "app.kubernetes.io/component": "embmigrate",
        "app.kubernetes.io/part-of": "ragfr",
        TARGET_LABEL: req.target_key,
    }


def job(req: JobRequest, name: str, deployment: dict[str, Any], configmap: dict[str, Any]) -> dict[str, Any]:
    """The run's Job, created suspended: it starts once its ServiceAccount exists (see `rbac`)."""
    source = schema_container(deployment)
    pod_spec = deployment["spec"]["template"]["spec"]
    ollama = (configmap.get("data") or {}).get("OLLAMA_BASE_URL")
    env = [e for e in source.get("env", []) if e.get("name") not in ("HOME", "OLLAMA_HOST")]
    env += [{"name": "HOME", "value": "/tmp"}, {"name": "RAGFR_CACHE_DIR", "value": "/tmp/ragfr-cache"}]
    if ollama:
        env.append({"name": "OLLAMA_HOST", "value": ollama})
    container: dict[str, Any] = {
        "name": "embmigrate",
        "image": source["image"],
        "imagePullPolicy": source.get("imagePullPolicy", "IfNotPresent"),
        "command": ["ragfr"],
        "args": migrate_args(req),
        "env": env,
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}, *ca_mounts(source)],
    }
    if "securityContext" in source:
        container["securityContext"] = source["securityContext"]
    main = (pod_spec.get("containers") or [{}])[0]
    if "resources" in main:
        container["resources"] = main["resources"]  # sized by the operator for a pod of this release
    pod: dict[str, Any] = {
        "serviceAccountName": name,
        "automountServiceAccountToken": True,  # the switch patches Open WebUI through the API
        # OnFailure: a crashed or OOM-killed migrator restarts in place and resumes from its checkpoint.
        "restartPolicy": "OnFailure",
        "containers": [container],
        "volumes": [{"name": "tmp", "emptyDir": {}},
                    *(v for v in pod_spec.get("volumes") or [] if v.get("name") == CA_VOLUME)],
    }
    pod.update({key: pod_spec[key] for key in POD_FIELDS if key in pod_spec})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": req.namespace, "labels": labels(req)},
        "spec": {
            "suspend": True,
            "backoffLimit": 6,
            "ttlSecondsAfterFinished": TTL_SECONDS,
            "template": {"metadata": {"labels": {**labels(req), **NETWORK_LABELS}}, "spec": pod},
        },
    }


def rbac(req: JobRequest, name: str, owner_uid: str | None) -> list[dict[str, Any]]:
    """ServiceAccount, Role and RoleBinding of one run; with the Job's uid they are owned by it and garbage-
    collected with it (a dry run has no uid yet and prints them without owner)."""
    meta: dict[str, Any] = {"name": name, "namespace": req.namespace, "labels": labels(req)}
    if owner_uid:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": owner_uid}]
    release = req.target
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta,
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [release.configmap],
                 "verbs": ["get", "patch"]},
                {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": [release.deployment],
                 "verbs": ["get", "patch"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": req.namespace}],
        },
    ]
