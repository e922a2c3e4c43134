"""The Open WebUI environment the chart computes is reserved (issue 48): every name the chart sets, found by
rendering (not read from the chart's list, which is what is checked), is refused in openwebui.extraEnv, where it
would override the chart's value, and, for the ConfigMap's, in openwebui.env, where the chart's value would silently
win. Five computed names (DATA_DIR, SENTENCE_TRANSFORMERS_HOME, RAGFR_GATE_CALIBRATION, ENABLE_WEBSOCKET_SUPPORT,
WEBSOCKET_MANAGER) were once missing from the reserved list."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from tests.support.chart import CHART, one, render

FILE = yaml.safe_load((CHART / "files" / "openwebui-env.yaml").read_text())
GATE_FEATURES: list[str] = json.loads((CHART / "files" / "gate-features.json").read_text())

# Every feature that adds a computed variable, with values unlike the settings file's (so a computed value never
# equals the file's by chance): metrics, a gate calibration, Redis, the first admin; and an external Redis whose
# URL comes from a Secret (the container-env variant of the Redis URLs).
FEATURES: list[dict[str, Any]] = [
    {"embedding": {"model": "nomic-embed-text:v1.5", "dims": 768},
     "openwebui": {"metrics": {"enabled": True}, "admin": {"existingSecret": "ragfr-admin"},
                   "gate": {"calibration": {
                       "embedding_model": "ollama:nomic-embed-text:v1.5", "features": GATE_FEATURES,
                       "model": {"mean": [0.5] * len(GATE_FEATURES), "scale": [0.1] * len(GATE_FEATURES),
                                 "coef": [1.0] * len(GATE_FEATURES), "intercept": 0.0},
                       "thresholds": {"answer_at": 0.7, "caution_at": 0.3}}}},
     "redis": {"enabled": True}},
    {"redis": {"existingSecret": "redis-url"}},
]


def _computed(values: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(ConfigMap names whose value the chart computes, names the Open WebUI container's env: sets)."""
    docs = render(values)
    data = one(docs, "ConfigMap", "-openwebui-env")["data"]
    configmap = {k for k, v in data.items() if k not in FILE or str(FILE[k]) != v}
    pod = one(docs, "Deployment", "-openwebui")["spec"]["template"]["spec"]
    container = next(c for c in pod["containers"] if c["name"] == "open-webui")
    return configmap, {e["name"] for e in container.get("env", [])}


def computed_names() -> tuple[set[str], set[str]]:
    configmap: set[str] = set()
    container: set[str] = set()
    for values in FEATURES:
        cm, env = _computed(values)
        configmap |= cm
        container |= env
    return configmap, container


CONFIGMAP, CONTAINER = computed_names()


def test_the_features_render_the_names_the_issue_found_unreserved() -> None:
    # Not vacuous: the renders above do compute the five names of issue 48, and the container's secrets.
    assert {"DATA_DIR", "SENTENCE_TRANSFORMERS_HOME", "RAGFR_GATE_CALIBRATION", "ENABLE_WEBSOCKET_SUPPORT",
            "WEBSOCKET_MANAGER", "RAG_EMBEDDING_MODEL", "RAGFR_METRICS_PORT"} <= CONFIGMAP
    assert {"PGVECTOR_DB_URL", "DATABASE_URL", "WEBUI_SECRET_KEY", "WEBUI_ADMIN_PASSWORD",
            "WEBSOCKET_REDIS_URL"} <= CONTAINER


def _refusal(values: dict[str, Any]) -> str | None:
    try:
        render(values)
    except Exception as exc:  # the chart's fail(): Helm's message
        return str(exc)
    return None


@pytest.mark.parametrize("name", sorted(CONFIGMAP | CONTAINER))
def test_every_computed_name_is_refused_in_extra_env(name: str) -> None:
    refusal = _refusal({"openwebui": {"extraEnv": [{"name": name, "value": "set-by-the-operator"}]}})
    assert refusal is not None, f"openwebui.extraEnv {name} renders: it would override the chart's value"
    assert f"openwebui.extraEnv: {name}" in refusal or "WEBUI_AUTH=set-by-the-operator" in refusal, refusal


@pytest.mark.parametrize("name", sorted(CONFIGMAP))
def test_every_computed_configmap_name_is_refused_in_env(name: str) -> None:
    refusal = _refusal({"openwebui": {"env": {name: "set-by-the-operator"}}})
    assert refusal is not None, f"openwebui.env.{name} renders, and the chart's value silently replaces it"
    assert f"openwebui.env.{name} is computed by the chart (from " in refusal, refusal


def test_an_operator_s_own_variable_is_still_accepted() -> None:
    # The reservation is the computed names, not everything: extraEnv and env stay usable.
    docs = render({"openwebui": {"extraEnv": [{"name": "RAGFR_SITE_NOTE", "value": "x"}],
                                 "env": {"WEBUI_NAME": "Assistant juridique"}}})
    pod = one(docs, "Deployment", "-openwebui")["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for c in pod["containers"] for e in c.get("env", [])}
    assert env["RAGFR_SITE_NOTE"] == "x"
    assert one(docs, "ConfigMap", "-openwebui-env")["data"]["WEBUI_NAME"] == "Assistant juridique"
