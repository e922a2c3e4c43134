"""Embedder spec parsing: the valid forms, and one clear error listing them for everything else."""

from __future__ import annotations

import pytest

from ragfr.embed import parse_spec
from ragfr.errors import ConfigError


@pytest.mark.parametrize(
    ("spec", "backend", "model", "model_id"),
    [
        ("local:multilingual-e5-small", "local", "multilingual-e5-small", "local:multilingual-e5-small"),
        ("local:use-multilingual", "local", "use-multilingual", "local:use-multilingual"),
        ("ollama:bge-m3", "ollama", "bge-m3", "ollama:bge-m3"),
        ("ollama:bge-m3:567m", "ollama", "bge-m3:567m", "ollama:bge-m3:567m"),
        ("  ollama:jeffh/intfloat-multilingual-e5-large:f16 ", "ollama", "jeffh/intfloat-multilingual-e5-large:f16",
         "ollama:jeffh/intfloat-multilingual-e5-large:f16"),
    ],
)
def test_valid_specs(spec: str, backend: str, model: str, model_id: str) -> None:
    parsed = parse_spec(spec)
    assert (parsed.backend, parsed.model, parsed.model_id) == (backend, model, model_id)


@pytest.mark.parametrize(
    "spec",
    ["", "   ", "bge-m3", "local:", "ollama:", "local:e5", "openai:text-embedding-3-small", "ollama:bad model",
     "ollama:../x", "LOCAL:multilingual-e5-small"],
)
def test_bad_specs_list_the_valid_forms(spec: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_spec(spec)
    message = str(err.value)
    for form in ("ollama:MODEL", "local:multilingual-e5-small", "local:use-multilingual"):
        assert form in message
    assert "\n" not in message
