"""Cross-encoder reranking (sentence-transformers CrossEncoder): off unless asked for, then loaded loudly.

Off by default: the French cross-encoder trained here ranks below the hybrid RRF order (issue 29,
docs/retrieval-quality.md "Cross-encoder"). When asked for, the model is --reranker, else $RAGFR_RERANKER,
else FRENCH_MODEL_DIR. Open WebUI without its reranker weights logs "CrossEncoder error" and quietly runs
without one; here a requested model that cannot be loaded is a startup error naming the model and the path tried.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from ragfr.errors import ConfigError

log = logging.getLogger(__name__)
# Where the ragfr/reranker image holds the French cross-encoder `make reranker` trains (docs/reranker.md).
FRENCH_MODEL_DIR = Path("/opt/ragfr/reranker")
ENV_VAR = "RAGFR_RERANKER"


class Reranker(Protocol):
    model_id: str

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...


class CrossEncoderReranker:
    """Scores are raw logits (e.g. ms-marco models: roughly -11 irrelevant .. +10 relevant); see gate.py."""

    def __init__(self, model: str, *, max_length: int = 512, batch_size: int = 16) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub at query time
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise ConfigError("reranking needs sentence-transformers: pip install 'ragfr[rerank]'") from exc
        try:
            self._model: Any = CrossEncoder(model, max_length=max_length, device="cpu")
        except Exception as exc:  # the library raises OSError, ValueError, HFValidationError...
            raise _unloadable(model, str(exc).splitlines()[0]) from exc
        self.model_id = model
        self._batch = batch_size

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        import torch

        # Identity: raw logits, the scale gate.py documents (the library's default would apply a sigmoid).
        scores = self._model.predict(
            [(query, p) for p in passages], batch_size=self._batch, show_progress_bar=False,
            activation_fn=torch.nn.Identity(),
        )
        return [float(s) for s in scores]


def _unloadable(model: str, why: str) -> ConfigError:
    where = "local path" if Path(model).exists() else "Hugging Face cache (HF_HOME) — offline"
    return ConfigError(
        f"reranker {model!r} could not be loaded from the {where}: {why}. "
        "Pre-cache the model (docs/runbooks/air-gapped-install.md) or search without --rerank"
    )


def resolve_model(explicit: str | None = None) -> str:
    """The cross-encoder to load: `explicit` (--reranker), else $RAGFR_RERANKER, else FRENCH_MODEL_DIR.

    An empty RAGFR_RERANKER counts as unset (the shell's ${VAR:-default}); an empty --reranker is refused
    rather than read as "the default". Only the last resort is checked here, because only it can be absent
    without the operator having named it: the error then says where ragfr looked and how to get a model.
    """
    if explicit is not None:
        if not explicit.strip():
            raise ConfigError("empty --reranker: give a model directory or a Hugging Face name")
        return explicit
    from_env = os.environ.get(ENV_VAR, "").strip()
    if from_env:
        return from_env
    if not FRENCH_MODEL_DIR.exists():
        raise ConfigError(
            f"no cross-encoder found: {ENV_VAR} is unset and {FRENCH_MODEL_DIR} (the French cross-encoder's "
            f"directory in the ragfr/reranker image) does not exist. `make reranker` builds one "
            f"(.state/reranker/model-<hash>/); set {ENV_VAR} or --reranker to its directory, or to a Hugging Face "
            "name in the local cache"
        )
    return str(FRENCH_MODEL_DIR)


def require_reranker_files(model: str) -> None:
    """Refuse a reranker whose files are absent before importing torch and sentence-transformers (~10 s).

    Only the presence of the model's config.json is checked, where the offline load would look for it; a
    present but broken model still fails in the load itself. With HF_HUB_OFFLINE=0 a load may download, so
    nothing is refused here.
    """
    if os.environ.get("HF_HUB_OFFLINE", "1").strip().lower() in ("0", "false", "no", "off"):
        return
    path = Path(model)
    if path.exists():
        if not (path / "config.json").is_file():
            raise _unloadable(model, f"no config.json in {path}")
        return
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        cached = try_to_load_from_cache(model, "config.json")
    except HFValidationError as exc:
        raise _unloadable(model, str(exc).splitlines()[0]) from exc
    if not isinstance(cached, str):
        raise _unloadable(model, "not in the local cache (its config.json was not found)")


@lru_cache(maxsize=4)
def load_reranker(model: str) -> CrossEncoderReranker:
    return CrossEncoderReranker(model)
