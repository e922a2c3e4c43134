"""Open WebUI's environment for `make up` and the owui tests, as the chart renders it.

charts/ragfr/files/openwebui-env.yaml holds the settings every install shares. On top of it the chart computes
what an operator sets as a value; `make up` (scripts/up.sh) and the owui tests (tests/owui/stack.py) take the
same values from charts/ragfr/values.yaml through `analyst_env` here, so the local stack the tests drive has the
chart's defaults:
  - openwebui.analysts: what the accounts the admin adds (role `user`) may do from their first login. Open WebUI
    0.12.4 shows a base model only to admins until the admin grants access to it, and refuses them knowledge
    bases (`workspace.knowledge` off); the env names below are read at each start (ENABLE_PERSISTENT_CONFIG is
    off in the settings file), so no admin step is needed;
  - the chat models Open WebUI lists (OLLAMA_API_CONFIGS, the Ollama connection's `model_ids`): the release's
    chat models, never the embedding model, which Ollama lists too but which cannot chat (nor the chart's
    ollama.models.extraEmbedding, an embedding migration's target: it is no chat model, so it is never passed here).
The chart's implementation is `ragfr.openwebui.analystEnv` in templates/_openwebui.tpl;
tests/chart/test_analysts.py renders it and compares it with this one.

`python -m ragfr_tools.owui_settings --embedding-model E [--chat-model M ...]` prints the settings file's lines
and these, one NAME=value per line (scripts/up.sh passes them to `env`); without --chat-model, values.yaml's
ollama.models.chat and extra (a real Ollama); the test double's chat model otherwise.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from ragfr_tools.repo import REPO

CHART = REPO / "charts" / "ragfr"
ENV_FILE = CHART / "files" / "openwebui-env.yaml"
VALUES_FILE = CHART / "values.yaml"

# openwebui.analysts.<value> -> Open WebUI's env name (a boolean, "true"/"false").
ANALYST_VALUES = {
    # Every account may use every model Open WebUI lists: with the list below, the release's chat models.
    "useChatModels": "BYPASS_MODEL_ACCESS_CONTROL",
    "createKnowledgeBases": "USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ACCESS",
    "shareKnowledgeWithGroups": "USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ALLOW_SHARING",
}
MODEL_LIST = "OLLAMA_API_CONFIGS"
COMPUTED = (*ANALYST_VALUES.values(), MODEL_LIST)


def ollama_name(name: str) -> str:
    """A model as Ollama's /api/tags names it (what Open WebUI's `model_ids` filter compares): the tag always
    shown, ":latest" when none was given."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def settings_file() -> dict[str, str]:
    return {k: str(v) for k, v in yaml.safe_load(ENV_FILE.read_text(encoding="utf-8")).items()}


def chart_values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load(VALUES_FILE.read_text(encoding="utf-8"))
    return values


def analyst_env(analysts: Mapping[str, Any], chat_models: Sequence[str], embedding_model: str) -> dict[str, str]:
    """The env names the chart computes from openwebui.analysts and the chat models (ollama.models.chat and
    extra); an empty list of chat models leaves Open WebUI's list unfiltered, as the chart does."""
    env = {name: str(bool(analysts[value])).lower() for value, name in ANALYST_VALUES.items()}
    embedding = ollama_name(embedding_model)
    listed = [ollama_name(m) for m in chat_models if m and ollama_name(m) != embedding]
    if listed:
        # Index "0": Open WebUI's one Ollama connection (OLLAMA_BASE_URL).
        env[MODEL_LIST] = json.dumps({"0": {"enable": True, "model_ids": listed}}, separators=(",", ":"))
    return env


def local_settings(chat_models: Sequence[str], embedding_model: str) -> dict[str, str]:
    """The settings file, then what the chart would compute with values.yaml's defaults for these models."""
    settings = settings_file()
    analysts = chart_values()["openwebui"]["analysts"]
    settings.update(analyst_env(analysts, chat_models, embedding_model))
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ragfr_tools.owui_settings", description=__doc__.split("\n")[0])
    parser.add_argument("--chat-model", action="append", default=[],
                        help="a chat model Open WebUI lists (repeat); none: values.yaml's ollama.models.chat and extra")
    parser.add_argument("--embedding-model", required=True, help="the embedding model (never listed for chat)")
    args = parser.parse_args(argv)
    models = chart_values()["ollama"]["models"]
    chat = args.chat_model or [models["chat"], *models["extra"]]
    for name, value in local_settings(chat, args.embedding_model).items():
        print(f"{name}={value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
