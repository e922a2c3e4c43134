"""Point Open WebUI at an embedding space: its ConfigMap (RAG_EMBEDDING_MODEL,
PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH) and a rollout restart of its Deployment.

Open WebUI reads both variables only at startup and refuses to start when the column's dimension differs
from PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH, so this runs right after the database switch commits. The
restart is a pod-template annotation, exactly what `kubectl rollout restart` writes, plus one naming the
space: re-applying the same space patches the same values and starts no second rollout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ragfr.embed import parse_spec
from ragfr.embmigrate.k8s import client
from ragfr.errors import ConfigError

SPACE_ANNOTATION = "ragfr.io/embedding-space"
RESTART_ANNOTATION = "kubectl.kubernetes.io/restartedAt"


@dataclass(frozen=True)
class Release:
    """Object names of a ragfr chart release (charts/ragfr: <fullname>-<component>)."""

    namespace: str
    fullname: str

    @property
    def configmap(self) -> str:
        return f"{self.fullname}-openwebui-env"

    @property
    def deployment(self) -> str:
        return f"{self.fullname}-openwebui"


def owui_model(spec: str) -> str:
    """Open WebUI embeds queries through Ollama (RAG_EMBEDDING_ENGINE=ollama): only ollama: models fit."""
    parsed = parse_spec(spec)
    if parsed.backend != "ollama":
        raise ConfigError(
            f"Open WebUI in the cluster embeds through Ollama and cannot use {parsed.model_id}; "
            "migrate to an ollama:MODEL spec there"
        )
    return parsed.model


def config_patch(spec: str, dims: int) -> dict[str, Any]:
    return {"data": {"RAG_EMBEDDING_MODEL": owui_model(spec), "PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH": str(dims)}}


def restart_patch(spec: str, dims: int, now: datetime | None = None) -> dict[str, Any]:
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    annotations = {SPACE_ANNOTATION: f"{parse_spec(spec).model_id}/{dims}", RESTART_ANNOTATION: stamp}
    return {"spec": {"template": {"metadata": {"annotations": annotations}}}}


def point_at(core: Any, apps: Any, release: Release, spec: str, dims: int, say: Callable[[str], None]) -> bool:
    """Update the ConfigMap and restart the Deployment unless already on this space; True if restarted."""
    from kubernetes.client.exceptions import ApiException

    patch = config_patch(spec, dims)
    try:
        core.patch_namespaced_config_map(release.configmap, release.namespace, patch)
        deployment = apps.read_namespaced_deployment(release.deployment, release.namespace)
        current = (deployment.spec.template.metadata.annotations or {}).get(SPACE_ANNOTATION)
        wanted = restart_patch(spec, dims)["spec"]["template"]["metadata"]["annotations"][SPACE_ANNOTATION]
        if current == wanted:
            say(f"Open WebUI ({release.namespace}/{release.deployment}) already runs on {wanted}")
            return False
        apps.patch_namespaced_deployment(release.deployment, release.namespace, restart_patch(spec, dims))
    except ApiException as exc:
        raise client.api_error(exc, f"reconfiguring Open WebUI ({release.namespace}/{release.deployment})") from exc
    say(
        f"Open WebUI ConfigMap {release.configmap}: RAG_EMBEDDING_MODEL={patch['data']['RAG_EMBEDDING_MODEL']}, "
        f"PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH={dims}; rollout restart of {release.deployment} requested"
    )
    return True


def space_hook(fullname: str, namespace: str | None, say: Callable[[str], None]) -> Callable[[str, int], None]:
    """The runner's on_switch/on_rollback callback for one release; validates credentials up front."""
    from kubernetes import client as k8s

    client.load()
    release = Release(client.own_namespace(namespace), fullname)
    core, apps = k8s.CoreV1Api(), k8s.AppsV1Api()

    def hook(spec: str, dims: int) -> None:
        point_at(core, apps, release, spec, dims, say)

    return hook
