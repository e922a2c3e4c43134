"""The models check (issue 36 item 3): Open WebUI's readiness and `helm test` require every model the release
names, by its exact name:tag, from Ollama's /api/tags.

The script (charts/ragfr/files/ollama_models.py) runs against the project's Ollama-API test double serving a
model store laid out as Ollama's (manifests/<host>/<namespace>/<model>/<tag> + blobs/): no Ollama binary runs
here. The double names models as Ollama's /api/tags does (tests/tools/test_devserver.py). The whole gate, in the
chart's own pods, is the cluster smoke's (tests/tools/test_cluster_smoke.py).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.chart import CHART, one, render

from ragfr.embed import Embedder, load_embedder
from ragfr_tools.devserver.server import store_files

SCRIPT = CHART / "files" / "ollama_models.py"
HELM_TEST = CHART / "files" / "helm-test.py"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder("local:multilingual-e5-small", cache=False)


@pytest.fixture()
def ollama(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[str, Path]]:
    """(URL, model directory) of a test double holding what the directory holds."""
    from ragfr_tools.devserver.server import make_server

    store = tmp_path / "ollama"
    server = make_server("127.0.0.1", 0, embedder, "bge-m3:567m", store / "models")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", store
    server.shutdown()
    server.server_close()


def copy_models(store: Path, names: list[str]) -> None:
    """What an operator's copy of ~/.ollama/models does (docs/runbooks/ollama-models-offline.md)."""
    for rel, body in store_files(names).items():
        (store / rel).parent.mkdir(parents=True, exist_ok=True)
        (store / rel).write_bytes(body)


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_another_tag_of_the_model_does_not_count(ollama: tuple[str, Path]) -> None:
    url, store = ollama
    copy_models(store, ["bge-m3:latest", "qwen2.5:3b"])  # what a bare `ollama pull bge-m3` stores
    lacking = check("--url", url, "bge-m3:567m", "qwen2.5:3b")
    assert lacking.returncode == 1, lacking.stdout
    assert lacking.stdout.startswith(f"ollama-models: Ollama at {url} lacks bge-m3:567m (it holds: bge-m3:latest, "
                                     "qwen2.5:3b)"), lacking.stdout
    copy_models(store, ["bge-m3:567m"])
    held = check("--url", url, "bge-m3:567m", "qwen2.5:3b")
    assert held.returncode == 0 and "holds bge-m3:567m, qwen2.5:3b" in held.stdout, held.stdout
    # A name without a tag is Ollama's ":latest", never "any tag".
    assert check("--url", url, "qwen2.5").returncode == 1
    assert check("--url", url, "registry.ollama.ai/library/qwen2.5:3b").returncode == 0


def test_a_pass_is_remembered_for_that_model_list_only(ollama: tuple[str, Path], tmp_path: Path) -> None:
    url, store = ollama
    passed = tmp_path / "passed"
    assert check("--url", url, "--passed-file", str(passed), "bge-m3:567m").returncode == 1
    assert not passed.exists()
    copy_models(store, ["bge-m3:567m"])
    assert check("--url", url, "--passed-file", str(passed), "bge-m3:567m").returncode == 0
    # Ollama restarting (here: gone) does not take a Ready pod out of its Service...
    gone = "http://127.0.0.1:9"
    assert check("--url", gone, "--passed-file", str(passed), "bge-m3:567m").returncode == 0
    # ...but another list (a new pod after an embedding switch) asks Ollama again.
    down = check("--url", gone, "--passed-file", str(passed), "bge-m3:567m", "qwen2.5:3b")
    assert down.returncode == 2 and f"Ollama at {gone} does not answer /api/tags" in down.stdout, down.stdout


def test_helm_test_names_the_missing_model(ollama: tuple[str, Path]) -> None:
    url, store = ollama
    copy_models(store, ["bge-m3:567m"])
    env = {"OLLAMA_URL": url, "EMBEDDING_MODEL": "bge-m3:567m", "OLLAMA_MODELS": "qwen2.5:3b",
           "OPENWEBUI_URL": "http://unused", "DATABASE_URL": "postgresql://unused", "EMBEDDING_DIMS": "1024"}

    def models() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(HELM_TEST), "models"], capture_output=True, text=True,
                              timeout=60, env=env)

    failed = models()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert failed.stdout.startswith(f"FAIL models: AssertionError: Ollama at {url} lacks qwen2.5:3b "
                                    "(it holds: bge-m3:567m)"), failed.stdout
    copy_models(store, ["qwen2.5:3b"])
    passed = models()
    assert passed.returncode == 0 and passed.stdout.startswith(f"PASS models: Ollama at {url} holds bge-m3:567m, "
                                                               "qwen2.5:3b"), passed.stdout


def readiness(values: dict) -> str:
    owui = one(render(values), "Deployment", "ragfr-openwebui")["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "ragfr-scripts", "mountPath": "/ragfr-scripts", "readOnly": True} in owui["volumeMounts"]
    command = owui["readinessProbe"]["exec"]["command"]
    assert command[:2] == ["sh", "-c"]
    return str(command[2])


MODELS_CHECK = ('python /ragfr-scripts/ollama_models.py --url "$OLLAMA_BASE_URL" --passed-file '
                '/tmp/ragfr-ollama-models-passed "$RAG_EMBEDDING_MODEL"')


@pytest.mark.parametrize("values", [
    {},
    {"openwebui": {"patch": {"enabled": False}}},
    {"ollama": {"enabled": False, "externalUrl": "http://gpu-box.lan:11434"}},
], ids=["default", "no-patch", "external-ollama"])
def test_open_webui_is_ready_only_with_every_model(values: dict) -> None:
    """The embedding model as Open WebUI is configured (its env, which an embedding switch repoints), the chat
    model and the extras by their exact tags, on whichever Ollama Open WebUI uses; then Open WebUI's /health."""
    values = {**values, "ollama": {**values.get("ollama", {}), "models": {"extra": ["nomic-embed-text:v1.5"]}}}
    check = readiness(values)
    assert f"{MODELS_CHECK} 'qwen2.5:3b' 'nomic-embed-text:v1.5' && curl -fsS -o /dev/null " \
           "http://127.0.0.1:8080/health" in check, check
    assert check.startswith("python -m ragfr.owui.patcher.check") == (values.get("openwebui") is None)
    env = one(render(values), "ConfigMap", "ragfr-openwebui-env")["data"]
    external = values["ollama"].get("externalUrl")
    assert env["OLLAMA_BASE_URL"] == (external or "http://ragfr-ollama:11434")
    assert env["RAG_EMBEDDING_MODEL"] == "bge-m3:567m"


def test_helm_test_checks_the_models_open_webui_uses() -> None:
    docs = render({"ollama": {"models": {"chat": "mistral:7b", "extra": ["nomic-embed-text:v1.5"]}}})
    pod = one(docs, "Pod", "ragfr-test")
    assert pod["metadata"]["labels"]["ragfr.io/ollama-client"] == "true"  # the NetworkPolicies let it reach Ollama
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][0]["env"]}
    assert env["OLLAMA_URL"] == "http://ragfr-ollama:11434"
    assert env["EMBEDDING_MODEL"] == {"configMapKeyRef": {"name": "ragfr-openwebui-env", "key": "RAG_EMBEDDING_MODEL"}}
    assert env["OLLAMA_MODELS"] == "mistral:7b nomic-embed-text:v1.5"


def test_pull_job_runs_beside_ollama_with_its_scheduling() -> None:
    """Anywhere else the Job's node would pull the multi-GB Ollama image only for the CLI."""
    scheduling = {"nodeSelector": {"kubernetes.io/hostname": "laptop-2"}, "priorityClassName": "ragfr",
                  "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                  "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                      {"weight": 1, "preference": {"matchExpressions": [
                          {"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}}
    docs = render({"ollama": scheduling})
    spec = one(docs, "Job", "ragfr-pull-models-*")["spec"]["template"]["spec"]
    ollama = one(docs, "Deployment", "ragfr-ollama")["spec"]["template"]["spec"]
    for key in ("nodeSelector", "tolerations", "priorityClassName"):
        assert spec[key] == ollama[key] == scheduling[key], key
    assert spec["affinity"]["nodeAffinity"] == scheduling["affinity"]["nodeAffinity"]
    assert spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": ollama_selector(docs)}}]


def ollama_selector(docs: list) -> dict:
    return dict(one(docs, "Deployment", "ragfr-ollama")["spec"]["selector"]["matchLabels"])
