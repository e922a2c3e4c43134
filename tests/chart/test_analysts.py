"""Issue 48 item 7: the analysts the admin adds can chat and build knowledge bases from their first login.

The chart renders openwebui.analysts and the chat models into Open WebUI's env (ragfr.openwebui.analystEnv);
`make up` and the owui tests compute the same names with tools/ragfr_tools/owui_settings.py. Both must agree for
the defaults and for an operator's changes, or the tests would drive another Open WebUI than the chart's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.support.chart import one, render

from ragfr_tools import owui_settings


def env_of(values: dict[str, Any]) -> dict[str, str]:
    return dict(one(render(values), "ConfigMap", "-openwebui-env")["data"])


def expected(values: dict[str, Any]) -> dict[str, str]:
    defaults = owui_settings.chart_values()
    analysts = {**defaults["openwebui"]["analysts"], **values.get("openwebui", {}).get("analysts", {})}
    models = {**defaults["ollama"]["models"], **values.get("ollama", {}).get("models", {})}
    embedding = values.get("embedding", {}).get("model", defaults["embedding"]["model"])
    return owui_settings.analyst_env(analysts, [models["chat"], *models["extra"]], embedding)


def test_defaults_let_analysts_chat_and_build_knowledge_bases_never_public() -> None:
    env = env_of({})
    assert env["BYPASS_MODEL_ACCESS_CONTROL"] == "true"
    assert env["USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ACCESS"] == "true"
    assert env["USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ALLOW_SHARING"] == "true"
    # Sharing with every account is Open WebUI's off by default, and the settings file keeps it so.
    assert env["USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ALLOW_PUBLIC_SHARING"] == "false"
    listed = json.loads(env["OLLAMA_API_CONFIGS"])["0"]["model_ids"]
    assert listed == ["qwen2.5:3b"], "the release's chat model, and not bge-m3 (the embedding model)"


@pytest.mark.parametrize("values", [
    {},
    {"openwebui": {"analysts": {"useChatModels": False, "createKnowledgeBases": False,
                                "shareKnowledgeWithGroups": False}}},
    {"ollama": {"models": {"chat": "mistral:7b", "extra": ["llama3.2:3b", "bge-m3:567m"]}}},
    {"ollama": {"models": {"chat": "", "extra": []}}},
    {"ollama": {"models": {"extra": ["llama3.2:3b"], "extraEmbedding": ["nomic-embed-text:v1.5"]}}},
])
def test_chart_and_local_stack_compute_the_same_env(values: dict[str, Any]) -> None:
    env = env_of(values)
    want = expected(values)
    got = {k: env[k] for k in owui_settings.COMPUTED if k in env}
    assert {k: v for k, v in got.items() if k != owui_settings.MODEL_LIST} == \
        {k: v for k, v in want.items() if k != owui_settings.MODEL_LIST}
    assert json.loads(got.get(owui_settings.MODEL_LIST, "null")) == json.loads(want.get(owui_settings.MODEL_LIST, "null"))


def test_the_embedding_model_is_never_listed_for_chat() -> None:
    env = env_of({"ollama": {"models": {"chat": "mistral:7b", "extra": ["bge-m3:567m", "phi3:3.8b"]}}})
    assert json.loads(env["OLLAMA_API_CONFIGS"])["0"]["model_ids"] == ["mistral:7b", "phi3:3.8b"]


def test_an_embedding_migrations_target_is_pulled_and_required_but_never_listed_for_chat() -> None:
    """docs/runbooks/embedding-migration.md names the new embedding model in ollama.models.extraEmbedding for the
    whole backfill: Ollama must hold it (the pull Job, Open WebUI's readiness, helm test), and analysts must not be
    offered it as a chat model (it cannot chat), unlike ollama.models.extra."""
    values = {"ollama": {"models": {"extra": ["llama3.2:3b"], "extraEmbedding": ["nomic-embed-text:v1.5"]}}}
    docs = render(values)
    env = dict(one(docs, "ConfigMap", "-openwebui-env")["data"])
    assert json.loads(env["OLLAMA_API_CONFIGS"])["0"]["model_ids"] == ["qwen2.5:3b", "llama3.2:3b"]
    test_pod = one(docs, "Pod", "ragfr-test")["spec"]["containers"][0]
    required = {e["name"]: e.get("value") for e in test_pod["env"]}["OLLAMA_MODELS"]
    assert required == "qwen2.5:3b llama3.2:3b nomic-embed-text:v1.5"
    pull = one(docs, "Job", "ragfr-pull-models-*")["spec"]["template"]["spec"]["containers"][0]
    pulled = {e["name"]: e.get("value") for e in pull["env"]}["OLLAMA_PULL_MODELS"]
    assert pulled.split() == ["bge-m3:567m", "qwen2.5:3b", "llama3.2:3b", "nomic-embed-text:v1.5"]
    # The same values listed as extra would be offered for chat: what the runbook used to do.
    env = dict(one(render({"ollama": {"models": {"extra": ["nomic-embed-text:v1.5"]}}}), "ConfigMap",
                   "-openwebui-env")["data"])
    assert "nomic-embed-text:v1.5" in json.loads(env["OLLAMA_API_CONFIGS"])["0"]["model_ids"]
