"""values.schema.json covers every value, and rejected values come back as one readable line."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from tests.support.chart import CHART, error_line

SCHEMA = json.loads((CHART / "values.schema.json").read_text())
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())


def _leaves(node: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(node, dict) and node:
        return [leaf for k, v in node.items() for leaf in _leaves(v, (*path, k))]
    return [path]


def _schema_at(path: tuple[str, ...]) -> dict[str, Any] | None:
    node: dict[str, Any] = SCHEMA
    for key in path:
        props = node.get("properties")
        if props is not None and key in props:
            node = props[key]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        elif node.get("type") == "object" and "properties" not in node:
            return node  # a free-form object (securityContext, affinity...) owns everything under it
        else:
            return None
    return node


def test_every_value_is_described_by_the_schema() -> None:
    missing = [".".join(p) for p in _leaves(VALUES) if _schema_at(p) is None]
    assert not missing, f"values without a schema entry: {missing}"


# Objects with named keys that still accept others: `global` receives a parent chart's globals (helm/helm#10392).
OPEN_OBJECTS = {".global"}


def test_every_schema_property_has_a_description_and_closed_objects() -> None:
    def walk(node: dict[str, Any], path: str) -> None:
        for key, sub in node.get("properties", {}).items():
            where = f"{path}.{key}"
            assert sub.get("description"), f"{where} has no description"
            if "properties" in sub and where not in OPEN_OBJECTS:
                assert sub.get("additionalProperties") is False, f"{where} accepts unknown keys"
            walk(sub, where)

    walk(SCHEMA, "")


def test_every_schema_property_exists_in_values() -> None:
    def walk(node: dict[str, Any], values: Any, path: str) -> None:
        for key, sub in node.get("properties", {}).items():
            assert isinstance(values, dict) and key in values, f"{path}.{key} in the schema but not in values.yaml"
            walk(sub, values[key], f"{path}.{key}")

    walk(SCHEMA, VALUES, "")


REJECTED = [
    ({"embedding": {"dims": "1024"}}, "at '/embedding/dims': got string, want integer"),
    ({"openwebui": {"replicaz": 2}}, "at '/openwebui': additional properties 'replicaz' not allowed"),
    ({"database": {"mode": "sqlite"}}, "at '/database/mode': value must be one of"),
    ({"openwebui": {"image": {"tag": "latest"}}},
     'image ghcr.io/open-webui/open-webui: the tag "latest" is not allowed'),
    ({"embedding": {"dims": 3072}}, "embedding.dims=3072: pgvector's HNSW index supports at most 2000 dimensions"),
    ({"openwebui": {"env": {"PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH": "768"}}},
     "openwebui.env.PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH is computed by the chart"),
    ({"openwebui": {"replicas": 2}}, "openwebui.replicas=2 needs Redis"),
    ({"openwebui": {"replicas": 2}, "redis": {"enabled": True}}, "openwebui.replicas=2 share one data volume"),
    ({"redis": {"enabled": True, "externalUrl": "redis://r:6379/0"}},
     "redis.enabled=true and redis.externalUrl are exclusive"),
    ({"database": {"mode": "external"}}, "database.external.host is required when database.mode=external"),
    ({"database": {"mode": "external", "external": {"host": "pg"}}},
     "database.external.existingSecret (a Secret holding the ragfr, openwebui and application-role passwords) is required"),
    ({"database": {"mode": "cnpg"}}, "database.mode=cnpg: the CloudNativePG owner role owns both databases"),
    ({"ollama": {"enabled": False}}, "ollama.enabled=false needs ollama.externalUrl"),
    ({"openwebui": {"reranker": {"source": "pvc"}}},
     "openwebui.reranker.source=pvc needs openwebui.reranker.existingClaim"),
    ({"openwebui": {"reranker": {"source": "image", "image": {"repository": ""}}}},
     "openwebui.reranker.source=image needs openwebui.reranker.image.repository"),
    ({"openwebui": {"reranker": {"source": "image"}}},
     "openwebui.reranker.source=image configures a cross-encoder, but none is named"),
    ({"openwebui": {"env": {"RAG_RERANKING_MODEL": "cross-encoder/ms-marco-MiniLM-L-6-v2"}, "reranker": {"revision": ""}}},
     "openwebui.reranker.source=download needs openwebui.reranker.revision: the Hugging Face commit sha"),
    ({"openwebui": {"reranker": {"revision": "main"}}}, "at '/openwebui/reranker/revision'"),
    ({"openwebui": {"ingress": {"enabled": True}, "admin": {"existingSecret": "owui-admin"}}},
     "openwebui.ingress.host is required when the ingress is enabled"),
    ({"openwebui": {"patch": {"files": ["../etc/passwd"]}}}, "at '/openwebui/patch/files/0'"),
]


@pytest.mark.parametrize(("values", "expected"), REJECTED, ids=[e[:40] for _, e in REJECTED])
def test_rejected_values_give_a_readable_error(values: dict[str, Any], expected: str) -> None:
    message = error_line(values)
    assert expected in message, message
    assert "goroutine" not in message and "panic" not in message


def test_ragfr_migrate_defaults_to_the_charts_embedding_model() -> None:
    # A space made by hand with `ragfr migrate` and no --embedding-model must be one the chart's Job and
    # wait-for-schema accept (`--embedding-model ollama:<embedding.model>`), not an untagged bge-m3 they refuse.
    from ragfr.db import migrate

    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert migrate.DEFAULT_MODEL == f"ollama:{values['embedding']['model']}"
    assert migrate.DEFAULT_DIMS == values["embedding"]["dims"]
