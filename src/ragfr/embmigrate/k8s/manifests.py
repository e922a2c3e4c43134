"""The objects `ragfr embeddings k8s` creates: a ServiceAccount allowed to patch exactly Open WebUI's
ConfigMap and Deployment, and a Job running `ragfr embeddings migrate` with them.

The Job borrows from the release's running Open WebUI Deployment rather than re-deriving the chart: the
`wait-for-schema` init container already runs the ragfr image with the database URL built from the
chart's Secret, and the pod labels are what the chart's NetworkPolicies admit to ragdb and Ollama.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ragfr.embmigrate.k8s.openwebui import Release
from ragfr.embmigrate.settings import MigrationSettings
from ragfr.errors import ConfigError

SCHEMA_CONTAINER = "wait-for-schema"
NETWORK_LABELS = {"ragfr.io/db-client": "true", "ragfr.io/ollama-client": "true"}


@dataclass(frozen=True, kw_only=True)
class JobRequest(MigrationSettings):
    namespace: str
    release: str

    @property
    def target(self) -> Release:
        return Release(self.namespace, self.release)

    @property
    def job_name(self) -> str:
        # Same request, same name: re-running the command finds (and follows) the Job already there.
        digest = hashlib.sha256(f"{self.to}/{self.dims}".encode()).hexdigest()[:8]
        return f"{self.release}-embmigrate-{digest}"[:63]

    @property
    def account(self) -> str:
        return f"{self.release}-embmigrate"[:63]


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


def objects(req: JobRequest, deployment: dict[str, Any], configmap: dict[str, Any]) -> list[dict[str, Any]]:
    """ServiceAccount, Role, RoleBinding and Job, as API-ready dicts (also printed by --dry-run)."""
    source = schema_container(deployment)
    pod_spec = deployment["spec"]["template"]["spec"]
    labels = {
        "app.kubernetes.io/name": "ragfr",
        "app.kubernetes.io/instance": req.release,
        "app.kubernetes.io/component": "embmigrate",
        "app.kubernetes.io/part-of": "ragfr",
    }
    ollama = (configmap.get("data") or {}).get("OLLAMA_BASE_URL")
    env = [e for e in source.get("env", []) if e.get("name") not in ("HOME", "OLLAMA_HOST")]
    env += [{"name": "HOME", "value": "/tmp"}, {"name": "RAGFR_CACHE_DIR", "value": "/tmp/ragfr-cache"}]
    if ollama:
        env.append({"name": "OLLAMA_HOST", "value": ollama})
    meta = {"name": req.account, "namespace": req.namespace, "labels": labels}
    container: dict[str, Any] = {
        "name": "embmigrate",
        "image": source["image"],
        "imagePullPolicy": source.get("imagePullPolicy", "IfNotPresent"),
        "command": ["ragfr"],
        "args": migrate_args(req),
        "env": env,
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    if "securityContext" in source:
        container["securityContext"] = source["securityContext"]
    pod: dict[str, Any] = {
        "serviceAccountName": req.account,
        "automountServiceAccountToken": True,  # the switch patches Open WebUI through the API
        # OnFailure: a crashed or OOM-killed migrator restarts in place and resumes from its checkpoint.
        "restartPolicy": "OnFailure",
        "containers": [container],
        "volumes": [{"name": "tmp", "emptyDir": {}}],
    }
    if "securityContext" in pod_spec:
        pod["securityContext"] = pod_spec["securityContext"]
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
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": req.account},
            "subjects": [{"kind": "ServiceAccount", "name": req.account, "namespace": req.namespace}],
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": req.job_name, "namespace": req.namespace, "labels": labels},
            "spec": {
                "backoffLimit": 6,
                "template": {"metadata": {"labels": {**labels, **NETWORK_LABELS}}, "spec": pod},
            },
        },
    ]
