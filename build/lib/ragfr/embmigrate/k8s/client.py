"""API clients from the pod's service account in the cluster, or ~/.kube/config outside it."""

from __future__ import annotations

from pathlib import Path

from ragfr.errors import ConfigError

SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def load() -> None:
    from kubernetes import config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        try:
            config.load_kube_config()
        except (config.ConfigException, OSError) as exc:
            raise ConfigError(
                f"no Kubernetes credentials (in-cluster service account or ~/.kube/config): {exc}"
            ) from exc


def own_namespace(explicit: str | None) -> str:
    if explicit:
        return explicit
    if SA_NAMESPACE.is_file():
        return SA_NAMESPACE.read_text().strip()
    raise ConfigError("no namespace given and not running in a pod: pass --k8s-namespace")


def api_error(exc: Exception, what: str) -> ConfigError:
    """One line from an ApiException: status, reason and the server's message."""
    status = getattr(exc, "status", "?")
    reason = getattr(exc, "reason", "") or ""
    body = getattr(exc, "body", "") or ""
    message = ""
    if body:
        import json

        try:
            message = json.loads(body).get("message", "")
        except (ValueError, AttributeError):
            message = str(body)[:200]
    return ConfigError(f"{what}: Kubernetes API {status} {reason}{': ' + message if message else ''}".strip())
