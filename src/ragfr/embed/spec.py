"""Embedder specs: the one string that names an embedding model everywhere (CLI, database, cache)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragfr.errors import ConfigError

# Offline models shipped as PyPI packages, with the dimension each always produces. Ollama models are
# open-ended, so their dimension is discovered by a probe call instead.
LOCAL_MODELS: dict[str, int] = {
    "multilingual-e5-small": 384,
    "use-multilingual": 512,
}

# Ollama model names: `name`, `name:tag`, `namespace/name:tag`, optionally behind a registry host.
_OLLAMA_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-/]*(:[A-Za-z0-9._\-]+)?$")

VALID_FORMS = (
    "ollama:MODEL (e.g. ollama:bge-m3:567m), "
    + ", ".join(f"local:{name} ({dims} dims)" for name, dims in LOCAL_MODELS.items())
)


@dataclass(frozen=True)
class EmbedderSpec:
    backend: str  # "ollama" or "local"
    model: str

    @property
    def model_id(self) -> str:
        """Canonical spec string: stored in the database and in every cache key."""
        return f"{self.backend}:{self.model}"

    def __str__(self) -> str:
        return self.model_id


def parse_spec(spec: str) -> EmbedderSpec:
    """Parse `ollama:MODEL` or `local:NAME`; anything else is a ConfigError listing the valid forms."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"empty embedder spec; valid forms: {VALID_FORMS}")
    backend, sep, model = spec.strip().partition(":")
    if not sep or not model:
        raise ConfigError(f"ill-formed embedder spec {spec!r}; valid forms: {VALID_FORMS}")
    if backend == "local":
        if model not in LOCAL_MODELS:
            raise ConfigError(f"unknown local embedder {spec!r}; valid forms: {VALID_FORMS}")
        return EmbedderSpec("local", model)
    if backend == "ollama":
        if not _OLLAMA_MODEL.match(model):
            raise ConfigError(f"ill-formed Ollama model name in {spec!r}; valid forms: {VALID_FORMS}")
        # `bge-m3` and `bge-m3:latest` stay distinct ids on purpose: the id is compared verbatim with the
        # stored embedding space and the `embedding_model` column, which Open WebUI's writers also fill.
        return EmbedderSpec("ollama", model)
    raise ConfigError(f"unknown embedder backend {backend!r} in {spec!r}; valid forms: {VALID_FORMS}")
