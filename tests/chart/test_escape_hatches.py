"""Escape hatches (extraEnv, extraEnvFrom, pod metadata, probe timing, runtimeClassName, Ollama settings)
extend the chart without replacing what it computes; Ollama models are pinned by tag like images."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.chart import env_of, error_line, example_values, one, render


def _pod(docs: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any]:
    return one(docs, kind, suffix)["spec"]["template"]


def test_open_webui_extra_env_and_env_from_come_after_the_charts() -> None:
    docs = render(example_values("escape-hatches"))
    main = _pod(docs, "Deployment", "-openwebui")["spec"]["containers"][0]
    env = env_of(main)
    assert env["OAUTH_CLIENT_SECRET"] == {"secretKeyRef": {"name": "openwebui-oauth", "key": "client-secret"}}
    assert env["ENABLE_OAUTH_SIGNUP"] == "true"
    names = [e["name"] for e in main["env"]]
    assert names.index("OAUTH_CLIENT_SECRET") > names.index("PGVECTOR_DB_URL")
    env_from = main["envFrom"]
    assert env_from[0]["configMapRef"]["name"].endswith("-openwebui-env")  # the chart's first, then the user's
    assert env_from[1:] == [{"secretRef": {"name": "openwebui-extra-secrets"}},
                            {"configMapRef": {"name": "openwebui-branding", "optional": True}}]


def test_pod_annotations_and_labels_are_added_not_substituted() -> None:
    docs = render(example_values("escape-hatches"))
    for kind, suffix in (("Deployment", "-openwebui"), ("StatefulSet", "-ragdb")):
        meta = _pod(docs, kind, suffix)["metadata"]
        assert meta["labels"]["team"] == "juridique"
        assert meta["labels"]["app.kubernetes.io/component"] == suffix[1:]
        assert meta["annotations"]["backup.velero.io/backup-volumes"] == "data"
        assert any(k.startswith("checksum/") for k in meta["annotations"])
    assert _pod(docs, "Deployment", "-ollama")["metadata"]["annotations"] == {"prometheus.io/scrape": "false"}


def test_probe_overrides_change_timing_and_keep_the_handlers() -> None:
    docs = render(example_values("escape-hatches"))
    main = _pod(docs, "Deployment", "-openwebui")["spec"]["containers"][0]
    assert main["startupProbe"] == {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 5,
                                    "failureThreshold": 120}
    readiness = main["readinessProbe"]
    assert "ragfr.owui.patcher.check" in readiness["exec"]["command"][-1]  # the French-patch gate survives
    assert readiness["timeoutSeconds"] == 20 and readiness["periodSeconds"] == 10
    ollama = _pod(docs, "Deployment", "-ollama")["spec"]["containers"][0]
    assert ollama["livenessProbe"] == {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 30,
                                       "failureThreshold": 6, "timeoutSeconds": 5}


def test_default_probes_are_unchanged_without_overrides() -> None:
    main = _pod(render(), "Deployment", "-openwebui")["spec"]["containers"][0]
    assert main["livenessProbe"] == {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 20,
                                     "failureThreshold": 6}


def test_ollama_settings_default_to_the_cpu_laptop_sizing_and_are_overridable() -> None:
    default = env_of(_pod(render(), "Deployment", "-ollama")["spec"]["containers"][0])
    assert (default["OLLAMA_KEEP_ALIVE"], default["OLLAMA_NUM_PARALLEL"], default["OLLAMA_MAX_LOADED_MODELS"]) == (
        "30m", "2", "2")
    tuned = env_of(_pod(render(example_values("escape-hatches")), "Deployment", "-ollama")["spec"]["containers"][0])
    assert (tuned["OLLAMA_KEEP_ALIVE"], tuned["OLLAMA_NUM_PARALLEL"], tuned["OLLAMA_MAX_LOADED_MODELS"]) == (
        "2h", "4", "3")
    assert tuned["OLLAMA_FLASH_ATTENTION"] == "1"


def test_runtime_class_only_where_asked() -> None:
    gpu = render(example_values("gpu"))
    assert _pod(gpu, "Deployment", "-ollama")["spec"]["runtimeClassName"] == "nvidia"
    assert "runtimeClassName" not in _pod(gpu, "Deployment", "-openwebui")["spec"]
    assert "runtimeClassName" not in _pod(render(), "Deployment", "-ollama")["spec"]


def test_pull_job_pulls_the_pinned_references() -> None:
    pull = one(render(example_values("escape-hatches")), "Job", "-pull-models-*")
    models = env_of(pull["spec"]["template"]["spec"]["containers"][0])["OLLAMA_PULL_MODELS"].split()
    assert models == ["bge-m3:567m", "qwen2.5:3b", "mistral:7b-instruct-v0.3-q4_K_M"]
    assert all(":" in m and not m.endswith(":latest") for m in models)


REFUSED = [
    ({"embedding": {"model": "bge-m3"}}, "embedding.model=bge-m3: Ollama models must be pinned by tag"),
    ({"embedding": {"model": "bge-m3:latest"}}, "embedding.model=bge-m3:latest: Ollama models must be pinned"),
    ({"ollama": {"models": {"chat": "qwen2.5"}}}, "ollama.models.chat=qwen2.5: Ollama models must be pinned"),
    ({"ollama": {"models": {"extra": ["llama3"]}}}, "ollama.models.extra=llama3: Ollama models must be pinned"),
    ({"ollama": {"models": {"extraEmbedding": ["nomic-embed-text:latest"]}}},
     "ollama.models.extraEmbedding=nomic-embed-text:latest: Ollama models must be pinned"),
    ({"openwebui": {"podLabels": {"app.kubernetes.io/component": "x"}}},
     "openwebui.podLabels.app.kubernetes.io/component: labels under app.kubernetes.io/"),
    ({"ollama": {"podLabels": {"ragfr.io/db-client": "true"}}}, "ollama.podLabels.ragfr.io/db-client: labels under"),
    ({"openwebui": {"extraEnv": [{"name": "DATABASE_URL", "value": "postgresql://elsewhere"}]}},
     "openwebui.extraEnv: DATABASE_URL is computed by the chart"),
    ({"ollama": {"extraEnv": [{"name": "OLLAMA_NUM_PARALLEL", "value": "8"}]}},
     "ollama.extraEnv: OLLAMA_NUM_PARALLEL is computed by the chart"),
    ({"openwebui": {"probes": {"readiness": {"httpGet": {"path": "/"}}}}}, "value must be one of 'initialDelaySeconds'"),
    ({"openwebui": {"extraEnv": [{"name": "X", "value": "1", "valueFrom": {"secretKeyRef": {}}}]}},
     "at '/openwebui/extraEnv/0'"),
    ({"openwebui": {"extraEnvFrom": [{"secretRef": {}}]}}, "at '/openwebui/extraEnvFrom/0"),
    ({"ollama": {"settings": {"keepAlive": "forever"}}}, "at '/ollama/settings/keepAlive'"),
    ({"ollama": {"settings": {"numParallel": 0}}}, "at '/ollama/settings/numParallel'"),
    ({"ollama": {"runtimeClassName": "Nvidia_GPU"}}, "at '/ollama/runtimeClassName'"),
]


@pytest.mark.parametrize(("values", "expected"), REFUSED, ids=[e[:45] for _, e in REFUSED])
def test_escape_hatches_refuse_what_would_break_the_chart(values: dict[str, Any], expected: str) -> None:
    message = error_line(values)
    assert expected in message, message
