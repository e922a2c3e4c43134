"""Kubernetes orchestration with the official client against a RECORDED FAKE API server (no API server
can run here): objects seeded from charts/ragfr rendered offline, every request recorded and asserted."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes import client as k8s
from tests.support.fake_kube import FakeKube

from ragfr.embmigrate.k8s import openwebui
from ragfr.embmigrate.k8s.manifests import JobRequest
from ragfr.embmigrate.k8s.orchestrate import JobFailedError, run
from ragfr.errors import ConfigError

NS, RELEASE = "rag", "ragfr"
TARGET = "ollama:nomic-embed-text"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def chart_objects() -> list[dict[str, Any]]:
    """Open WebUI's Deployment and ConfigMap exactly as the chart renders them."""
    import helm_python as helm
    from tests.support.paths import REPO

    rendered = helm.Chart.load(REPO / "charts" / "ragfr").render(
        {"global": {"imageSource": "imported"}}, name=RELEASE, namespace=NS, revision=1, is_install=True)
    docs = [d for path, text in rendered.items() if not path.endswith("NOTES.txt")
            for d in yaml.safe_load_all(text) if d]
    wanted = {("Deployment", f"{RELEASE}-openwebui"), ("ConfigMap", f"{RELEASE}-openwebui-env")}
    found = [d for d in docs if (d["kind"], d["metadata"]["name"]) in wanted]
    assert len(found) == 2, [(d["kind"], d["metadata"]["name"]) for d in docs]
    return found


def _api(fake: FakeKube) -> k8s.ApiClient:
    return k8s.ApiClient(k8s.Configuration(host=fake.url))


def _req(**kw: Any) -> JobRequest:
    return JobRequest(namespace=NS, release=RELEASE, to=TARGET, **kw)


def test_dry_run_prints_the_plan_and_creates_nothing_recorded_fake_api(chart_objects: list[dict[str, Any]]) -> None:
    out: list[str] = []
    with FakeKube(NS, chart_objects) as fake:
        assert run(_req(dims=768), dry_run=True, wait=True, timeout=5, say=out.append, out=out.append,
                   api=_api(fake)) == 0
    assert {m for m, _, _ in fake.requests} == {"GET"}
    text = "\n".join(out)
    assert "RAG_EMBEDDING_MODEL=bge-m3" in text and "nothing was created (--dry-run)" in text
    assert "RAG_EMBEDDING_MODEL=nomic-embed-text" in text
    manifests = list(yaml.safe_load_all(text.split("---\n", 1)[1].rsplit("nothing was created", 1)[0]))
    for manifest in manifests:
        kubernetes_validate.validate(manifest, "1.30.0", strict=True)  # the real API schemas, offline
    assert [m["kind"] for m in manifests] == ["Job", "ServiceAccount", "Role", "RoleBinding"]
    job = manifests[0]
    assert job["spec"]["suspend"] is True and job["spec"]["ttlSecondsAfterFinished"] == 3 * 24 * 3600


def test_job_is_created_with_the_release_image_credentials_and_labels_recorded_fake_api(
    chart_objects: list[dict[str, Any]],
) -> None:
    # The Deployment as an air-gapped, tainted cluster has it: the run must be able to start there too.
    objects = copy.deepcopy(chart_objects)
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    pod_spec = deployment["spec"]["template"]["spec"]
    pod_spec.update({"imagePullSecrets": [{"name": "internal-registry"}], "nodeSelector": {"ragfr/node": "a"},
                     "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]})
    said: list[str] = []
    with FakeKube(NS, objects) as fake:
        assert run(_req(batch=32), dry_run=False, wait=True, timeout=5, say=said.append, out=said.append,
                   api=_api(fake), poll=0) == 0
    posts = [(path, body) for method, path, body in fake.requests if method == "POST"]
    assert [b["kind"] for _, b in posts] == ["Job", "ServiceAccount", "Role", "RoleBinding"]
    job = posts[0][1]
    name = job["metadata"]["name"]
    assert job["spec"]["suspend"] is True  # created suspended, started once its account exists
    stored_job = fake.objects[f"/apis/batch/v1/namespaces/{NS}/jobs/{name}"]
    for _, rbac_obj in posts[1:]:
        assert rbac_obj["metadata"]["name"] == name
        assert rbac_obj["metadata"]["ownerReferences"] == [
            {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": stored_job["metadata"]["uid"]}]
    patches = [(p, b) for m, p, b in fake.requests if m == "PATCH"]
    assert patches == [(f"/apis/batch/v1/namespaces/{NS}/jobs/{name}",
                        {"content-type": "application/strategic-merge-patch+json", "body": {"spec": {"suspend": False}}})]
    schema = next(c for c in pod_spec["initContainers"] if c["name"] == "wait-for-schema")
    pod = job["spec"]["template"]
    for field in ("imagePullSecrets", "nodeSelector", "tolerations", "securityContext"):
        assert pod["spec"][field] == pod_spec[field], field
    assert pod["spec"]["serviceAccountName"] == name
    container = pod["spec"]["containers"][0]
    assert container["image"] == schema["image"]
    assert container["resources"] == pod_spec["containers"][0]["resources"]
    env = {e["name"]: e for e in container["env"]}
    assert env["DATABASE_URL"] == next(e for e in schema["env"] if e["name"] == "DATABASE_URL")
    assert "secretKeyRef" in env["PGPASSWORD"]["valueFrom"]  # libpq reads it; the URL holds no password
    assert "$(" not in env["DATABASE_URL"]["value"] and "@" in env["DATABASE_URL"]["value"]
    assert env["OLLAMA_HOST"]["value"].startswith("http://")
    assert pod["metadata"]["labels"]["ragfr.io/db-client"] == "true"
    assert pod["metadata"]["labels"]["ragfr.io/ollama-client"] == "true"
    assert container["args"][:4] == ["embeddings", "migrate", "--to", TARGET]
    assert not any("DATABASE_URL" in a or a == "--dsn" for a in container["args"])  # the URL stays in the env
    assert "--k8s-release" in container["args"] and "32" in container["args"]
    role = posts[2][1]
    assert {n for r in role["rules"] for n in r["resourceNames"]} == {"ragfr-openwebui-env", "ragfr-openwebui"}
    job_gets = [p for m, p, _ in fake.requests if m == "GET" and "/jobs/" in p]
    assert len(job_gets) == 2 and any("succeeded 1" in s for s in said)


def test_rerun_while_a_run_is_in_progress_follows_it_recorded_fake_api(chart_objects: list[dict[str, Any]]) -> None:
    said: list[str] = []
    with FakeKube(NS, chart_objects) as fake:
        api = _api(fake)
        run(_req(), dry_run=False, wait=False, timeout=5, say=said.append, out=said.append, api=api, now=T0)
        run(_req(), dry_run=False, wait=True, timeout=5, say=said.append, out=said.append, api=api, poll=0,
            now=T0 + timedelta(minutes=5))
    jobs = [p for p in fake.objects if "/jobs/" in p]
    assert len(jobs) == 1 and any(f"in progress: following Job {jobs[0].rsplit('/', 1)[1]}" in s for s in said)


def test_migrate_rollback_migrate_again_does_the_work_twice_recorded_fake_api(
    chart_objects: list[dict[str, Any]],
) -> None:
    """The second migration after a rollback is a new run: a finished Job of the same target is history."""
    with FakeKube(NS, chart_objects) as fake:
        api = _api(fake)
        run(_req(), dry_run=False, wait=True, timeout=5, say=print, out=print, api=api, poll=0, now=T0)
        # (the rollback happens in the database; the first run's Job stays until its TTL)
        run(_req(), dry_run=False, wait=True, timeout=5, say=print, out=print, api=api, poll=0,
            now=T0 + timedelta(hours=2))
    job_posts = [b["metadata"]["name"] for m, _, b in fake.requests if m == "POST" and b["kind"] == "Job"]
    assert len(job_posts) == 2 and job_posts[0] != job_posts[1]
    starts = [p for m, p, _ in fake.requests if m == "PATCH" and "/jobs/" in p]
    assert [p.rsplit("/", 1)[1] for p in starts] == job_posts


def test_a_failed_job_is_one_clear_error_recorded_fake_api(chart_objects: list[dict[str, Any]]) -> None:
    failed = [{"failed": 7, "conditions": [{"type": "Failed", "status": "True"}]}]
    with FakeKube(NS, chart_objects, job_statuses=failed) as fake, pytest.raises(JobFailedError) as err:
        run(_req(), dry_run=False, wait=True, timeout=5, say=print, out=print, api=_api(fake), poll=0)
    assert "kubectl -n rag logs job/ragfr-embmigrate-" in str(err.value)


def test_switch_repoints_open_webui_once_recorded_fake_api(chart_objects: list[dict[str, Any]]) -> None:
    said: list[str] = []
    release = openwebui.Release(NS, RELEASE)
    with FakeKube(NS, chart_objects) as fake:
        api = _api(fake)
        core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
        assert openwebui.point_at(core, apps, release, TARGET, 768, said.append) is True
        assert openwebui.point_at(core, apps, release, TARGET, 768, said.append) is False  # idempotent
    cm = fake.objects[f"/api/v1/namespaces/{NS}/configmaps/{release.configmap}"]["data"]
    assert cm["RAG_EMBEDDING_MODEL"] == "nomic-embed-text"
    assert cm["PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH"] == "768"
    template = fake.objects[f"/apis/apps/v1/namespaces/{NS}/deployments/{release.deployment}"]["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    assert annotations[openwebui.SPACE_ANNOTATION] == f"{TARGET}/768"
    assert openwebui.RESTART_ANNOTATION in annotations
    assert any(a.startswith("checksum/") for a in annotations)  # the chart's own annotations are kept
    deployment_patches = [b for m, p, b in fake.requests if m == "PATCH" and "/deployments/" in p]
    assert len(deployment_patches) == 1
    assert deployment_patches[0]["content-type"] == "application/strategic-merge-patch+json"


def test_a_model_open_webui_cannot_use_is_refused_before_any_call() -> None:
    with pytest.raises(ConfigError, match="cannot use local:multilingual-e5-small"):
        run(JobRequest(namespace=NS, release=RELEASE, to="local:multilingual-e5-small"), dry_run=True, wait=False, timeout=1,
            say=print, out=print, api=object())


def test_namespace_and_context_default_like_kubectl_recorded_fake_api(
    chart_objects: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragfr.cli import main as cli_main

    with FakeKube(NS, chart_objects) as fake:
        kubeconfig = tmp_path / "config"
        kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "lab",
            "clusters": [{"name": "c", "cluster": {"server": fake.url}}],
            "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
            "contexts": [{"name": "lab", "context": {"cluster": "c", "user": "u", "namespace": NS}},
                         {"name": "bare", "context": {"cluster": "c", "user": "u"}}],
        }))
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        # No --namespace: the current context's namespace, as kubectl would use.
        assert cli_main(["embeddings", "k8s", "--release", RELEASE, "--to", TARGET, "--dry-run"]) == 0
        assert fake.requests and all(f"/namespaces/{NS}/" in path for _, path, _ in fake.requests)
        # --context bare names no namespace: "default", where this release does not exist.
        assert cli_main(["embeddings", "k8s", "--context", "bare", "--release", RELEASE, "--to", TARGET,
                         "--dry-run"]) == 2
        assert "in namespace default" in capsys.readouterr().err
        assert cli_main(["embeddings", "k8s", "--context", "nope", "--release", RELEASE, "--to", TARGET,
                         "--dry-run"]) == 2
        assert "kube context 'nope' not found in the kubeconfig (contexts: lab, bare)" in capsys.readouterr().err
