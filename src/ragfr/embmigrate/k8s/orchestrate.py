"""`ragfr embeddings k8s`: read the release, print the plan (--dry-run) or start a run and follow it.

A run is one Job plus its ServiceAccount/Role/RoleBinding, owned by the Job. A run of the same target that
is still in progress is followed, not duplicated; a finished one (say, before a rollback) is history, and
migrating again starts a new run that does the work again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import yaml

from ragfr.embmigrate.k8s import client
from ragfr.embmigrate.k8s.manifests import TARGET_LABEL, JobRequest, job, labels, rbac
from ragfr.embmigrate.k8s.openwebui import owui_model
from ragfr.errors import RagfrError

__all__ = ["JobRequest", "run"]

POLL_SECONDS = 5.0


class JobFailedError(RagfrError):
    """The migration Job ran out of retries."""


def _read_release(api: Any, req: JobRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    release = req.target
    try:
        deployment = apps.read_namespaced_deployment(release.deployment, release.namespace)
        configmap = core.read_namespaced_config_map(release.configmap, release.namespace)
    except ApiException as exc:
        raise client.api_error(exc, f"reading release {req.release} in namespace {req.namespace}") from exc
    return api.sanitize_for_serialization(deployment), api.sanitize_for_serialization(configmap)


def plan_lines(req: JobRequest, name: str, configmap: dict[str, Any], manifest: dict[str, Any]) -> list[str]:
    data = configmap.get("data") or {}
    release = req.target
    job_container = manifest["spec"]["template"]["spec"]["containers"][0]
    return [
        f"release {req.release} in {req.namespace}: Open WebUI on RAG_EMBEDDING_MODEL="
        f"{data.get('RAG_EMBEDDING_MODEL')}, PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH="
        f"{data.get('PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH')}",
        "plan (unless a run of this target is in progress, which is followed instead):",
        f"  1. create Job {name}, suspended: ragfr {' '.join(job_container['args'])}",
        "     (re-embed, index CONCURRENTLY, verify; restarts resume from the last committed batch)",
        f"  2. create ServiceAccount/Role/RoleBinding {name}, owned by the Job (get+patch on {release.configmap} "
        f"and {release.deployment} only), then start the Job",
        "  3. " + ("stop before the switch (--no-switch)" if req.no_switch else
                   f"at the switch the Job sets RAG_EMBEDDING_MODEL={owui_model(req.to)} and "
                   f"PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH=<probed dims> in {release.configmap} and restarts "
                   f"{release.deployment}"),
        f"  4. {manifest['spec']['ttlSecondsAfterFinished'] // 3600} h after it finishes, Kubernetes deletes the Job "
        "and, with it, its ServiceAccount, Role and RoleBinding",
        "  5. afterwards: set embedding.model/embedding.dims in your Helm values before the next upgrade, then "
        "`ragfr embeddings finalize` (or rollback)",
    ]


def _create(api: Any, manifest: dict[str, Any], say: Callable[[str], None]) -> dict[str, Any]:
    """Create one object and return it as the server stored it (with its uid)."""
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    kind, ns, name = manifest["kind"], manifest["metadata"]["namespace"], manifest["metadata"]["name"]
    body: Any = manifest  # the client serialises plain dicts as they are
    create = {
        "ServiceAccount": lambda: k8s.CoreV1Api(api).create_namespaced_service_account(ns, body),
        "Role": lambda: k8s.RbacAuthorizationV1Api(api).create_namespaced_role(ns, body),
        "RoleBinding": lambda: k8s.RbacAuthorizationV1Api(api).create_namespaced_role_binding(ns, body),
        "Job": lambda: k8s.BatchV1Api(api).create_namespaced_job(ns, body),
    }[kind]
    try:
        created = create()
    except ApiException as exc:
        raise client.api_error(exc, f"creating {kind} {name}") from exc
    say(f"created {kind} {name}")
    stored: dict[str, Any] = api.sanitize_for_serialization(created)
    return stored


def _finished(job_status: dict[str, Any]) -> bool:
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in job_status.get("conditions") or [])


def _in_progress(api: Any, req: JobRequest) -> str | None:
    """Name of an unfinished run of this target, if any."""
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    own = labels(req)
    selector = ",".join(f"{k}={own[k]}" for k in ("app.kubernetes.io/instance", "app.kubernetes.io/component",
                                                   TARGET_LABEL))
    try:
        found = k8s.BatchV1Api(api).list_namespaced_job(req.namespace, label_selector=selector)
    except ApiException as exc:
        raise client.api_error(exc, f"listing Jobs in namespace {req.namespace}") from exc
    runs = api.sanitize_for_serialization(found).get("items") or []
    unfinished = sorted(j["metadata"]["name"] for j in runs if not _finished(j.get("status") or {}))
    return unfinished[-1] if unfinished else None


def _start(api: Any, req: JobRequest, name: str, say: Callable[[str], None]) -> None:
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    try:
        k8s.BatchV1Api(api).patch_namespaced_job(name, req.namespace, {"spec": {"suspend": False}})
    except ApiException as exc:
        raise client.api_error(exc, f"starting Job {name}") from exc
    say(f"started Job {name}")


def follow(
    api: Any, req: JobRequest, name: str, timeout: float, say: Callable[[str], None], poll: float = POLL_SECONDS
) -> None:
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    batch = k8s.BatchV1Api(api)
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            job = batch.read_namespaced_job(name, req.namespace)
        except ApiException as exc:
            raise client.api_error(exc, f"reading Job {name}") from exc
        st = job.status or k8s.V1JobStatus()
        seen = (st.active or 0, st.succeeded or 0, st.failed or 0)
        if seen != last:
            say(f"Job {name}: active {seen[0]}, succeeded {seen[1]}, failed {seen[2]}")
            last = seen
        if st.succeeded:
            return
        if any(c.type == "Failed" and c.status == "True" for c in st.conditions or []):
            raise JobFailedError(
                f"Job {name} failed; see `kubectl -n {req.namespace} logs job/{name}`; "
                "re-running the same command resumes the migration"
            )
        if time.monotonic() > deadline:
            raise JobFailedError(f"Job {name} still running after {timeout:.0f}s; it keeps running")
        time.sleep(poll)


def run(
    req: JobRequest,
    *,
    dry_run: bool,
    wait: bool,
    timeout: float,
    say: Callable[[str], None],
    out: Callable[[str], None],
    api: Any = None,
    poll: float = POLL_SECONDS,
    now: datetime | None = None,
    context: str | None = None,
) -> int:
    owui_model(req.to)  # refuse a target Open WebUI cannot use before touching anything
    if api is None:
        from kubernetes import client as k8s

        client.load(context)
        api = k8s.ApiClient()
    deployment, configmap = _read_release(api, req)
    name = req.job_name((now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S"))
    manifest = job(req, name, deployment, configmap)
    if dry_run:
        out("\n".join(plan_lines(req, name, configmap, manifest)))
        out("---\n" + yaml.safe_dump_all([manifest, *rbac(req, name, None)], sort_keys=False))
        out("nothing was created (--dry-run)")
        return 0
    running = _in_progress(api, req)
    if running:
        say(f"a run of this migration is in progress: following Job {running}")
        name = running
    else:
        created = _create(api, manifest, say)
        for obj in rbac(req, name, created["metadata"]["uid"]):
            _create(api, obj, say)
        _start(api, req, name, say)
    if wait:
        follow(api, req, name, timeout, say, poll)
        say(f"Job {name} succeeded")
    return 0
