"""API clients from the pod's service account in the cluster, or ~/.kube/config outside it."""

from __future__ import annotations

import os
from pathlib import Path

from ragfr.errors import ConfigError

SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def kubeconfig_file() -> str:
    """$KUBECONFIG (its first existing file) or ~/.kube/config, read now: the client library reads the
    variable once, when it is imported."""
    for candidate in os.environ.get("KUBECONFIG", "").split(os.pathsep):
        if candidate and Path(candidate).expanduser().is_file():
            return str(Path(candidate).expanduser())
    return str(Path("~/.kube/config").expanduser())


def load(context: str | None = None) -> None:
    """Credentials as kubectl finds them: the pod's service account in a cluster, else $KUBECONFIG or
    ~/.kube/config at `context` (default: its current context)."""
    from kubernetes import config

    if context is None:
        try:
            config.load_incluster_config()
            return
        except config.ConfigException:
            pass
    try:
        config.load_kube_config(config_file=kubeconfig_file(), context=context)
    except (config.ConfigException, OSError) as exc:
        raise ConfigError(f"no Kubernetes credentials (in-cluster service account or kubeconfig): {exc}") from exc


def default_namespace(context: str | None = None) -> str:
    """Like kubectl: the namespace of the kubeconfig context (current one unless named), "default" when the
    context names none; in a pod without kubeconfig, the pod's own namespace."""
    from kubernetes import config

    try:
        contexts, current = config.list_kube_config_contexts(config_file=kubeconfig_file())
    except (config.ConfigException, OSError):
        if SA_NAMESPACE.is_file():
            return SA_NAMESPACE.read_text().strip()
        raise ConfigError("no kubeconfig and not running in a pod: pass --namespace") from None
    chosen = current if context is None else next((c for c in contexts if c.get("name") == context), None)
    if chosen is None:
        names = ", ".join(c.get("name", "?") for c in contexts)
        raise ConfigError(f"kube context {context!r} not found in the kubeconfig (contexts: {names})")
    return str((chosen.get("context") or {}).get("namespace") or "default")


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
