"""`ragfr embeddings k8s`: read the release, print the plan (--dry-run) or create the Job and follow it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import yaml

from ragfr.embmigrate.k8s import client
from ragfr.embmigrate.k8s.manifests import JobRequest, objects
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


def plan_lines(req: JobRequest, configmap: dict[str, Any], manifests: list[dict[str, Any]]) -> list[str]:
    data = configmap.get("data") or {}
    release = req.target
    job_container = manifests[-1]["spec"]["template"]["spec"]["containers"][0]
    return [
        f"release {req.release} in {req.namespace}: Open WebUI on RAG_EMBEDDING_MODEL="
        f"{data.get('RAG_EMBEDDING_MODEL')}, PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH="
        f"{data.get('PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH')}",
        "plan:",
        f"  1. create ServiceAccount/Role/RoleBinding {req.account} (get+patch on {release.configmap} and "
        f"{release.deployment} only)",
        f"  2. create Job {req.job_name}: ragfr {' '.join(job_container['args'])}",
        "     (re-embed, index CONCURRENTLY, verify; restarts resume from the last committed batch)",
        "  3. " + ("stop before the switch (--no-switch)" if req.no_switch else
                   f"at the switch the Job sets RAG_EMBEDDING_MODEL={owui_model(req.to)} and "
                   f"PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH=<probed dims> in {release.configmap} and restarts "
                   f"{release.deployment}"),
        "  4. afterwards: set embedding.model/embedding.dims in your Helm values before the next upgrade, then "
        "`ragfr embeddings finalize` (or rollback)",
    ]


def _create(api: Any, manifest: dict[str, Any], say: Callable[[str], None]) -> bool:
    """Create one object; an existing one (409) is kept. True if created."""
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
        create()
    except ApiException as exc:
        if exc.status == 409:
            say(f"{kind} {name} already exists: kept")
            return False
        raise client.api_error(exc, f"creating {kind} {name}") from exc
    say(f"created {kind} {name}")
    return True


def follow(api: Any, req: JobRequest, timeout: float, say: Callable[[str], None], poll: float = POLL_SECONDS) -> None:
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    batch = k8s.BatchV1Api(api)
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            job = batch.read_namespaced_job(req.job_name, req.namespace)
        except ApiException as exc:
            raise client.api_error(exc, f"reading Job {req.job_name}") from exc
        st = job.status or k8s.V1JobStatus()
        seen = (st.active or 0, st.succeeded or 0, st.failed or 0)
        if seen != last:
            say(f"Job {req.job_name}: active {seen[0]}, succeeded {seen[1]}, failed {seen[2]}")
            last = seen
        if st.succeeded:
            return
        if any(c.type == "Failed" and c.status == "True" for c in st.conditions or []):
            raise JobFailedError(
                f"Job {req.job_name} failed; see `kubectl -n {req.namespace} logs job/{req.job_name}`; "
                "re-running the same command resumes the migration"
            )
        if time.monotonic() > deadline:
            raise JobFailedError(f"Job {req.job_name} still running after {timeout:.0f}s; it keeps running")
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
) -> int:
    owui_model(req.to)  # refuse a target Open WebUI cannot use before touching anything
    if api is None:
        from kubernetes import client as k8s

        client.load()
        api = k8s.ApiClient()
    deployment, configmap = _read_release(api, req)
    manifests = objects(req, deployment, configmap)
    if dry_run:
        out("\n".join(plan_lines(req, configmap, manifests)))
        out("---\n" + yaml.safe_dump_all(manifests, sort_keys=False))
        out("nothing was created (--dry-run)")
        return 0
    for manifest in manifests:
        _create(api, manifest, say)
    if wait:
        follow(api, req, timeout, say, poll)
        say(f"Job {req.job_name} succeeded")
    return 0
