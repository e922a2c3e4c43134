"""Cross-encoder reranking (sentence-transformers CrossEncoder): off unless asked for, then loaded loudly.

Off by default: the French cross-encoder trained here ranks below the hybrid RRF order (issue 29,
docs/retrieval-quality.md "Cross-encoder"). When asked for, the model is --reranker, else $RAGFR_RERANKER,
else FRENCH_MODEL, the name `make reranker`'s model is published under, looked up offline in the Hugging Face
cache (hub_cache_dir()). Open WebUI without its reranker weights logs "CrossEncoder error" and quietly runs
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
# The French cross-encoder `make reranker` trains, by the Hugging Face repository id it is published under
# (ragfr_tools.reranker.package.REPO): the name Open WebUI's RAG_RERANKING_MODEL gives it, in the cache the
# ragfr/reranker image holds (docs/reranker.md). Never downloaded: looked up in the local cache only.
FRENCH_MODEL = "ragfr/reranker-fr"
ENV_VAR = "RAGFR_RERANKER"
# sentence-transformers' CrossEncoder takes its cache folder from this variable when set, else the hub cache.
ST_HOME_VAR = "SENTENCE_TRANSFORMERS_HOME"


def _st_home() -> str | None:
    return os.environ.get(ST_HOME_VAR, "").strip() or None


def _offline() -> None:
    """Never reach for a hub at query time. Before the first huggingface_hub import: it reads the variable once."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def hub_cache_dir() -> Path:
    """Where a load by name looks: $SENTENCE_TRANSFORMERS_HOME when set (CrossEncoder's cache folder), else the
    Hugging Face hub cache ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)."""
    st_home = _st_home()
    if st_home:
        return Path(st_home)
    _offline()
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


class Reranker(Protocol):
    model_id: str

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...


class CrossEncoderReranker:
    """Scores are raw logits (e.g. ms-marco models: roughly -11 irrelevant .. +10 relevant); see gate.py.

    max_length None (the default) keeps the model's own saved maximum (the French model: the 128 tokens it was
    trained at), as Open WebUI's `CrossEncoder(path)` does: the CLI scores passages the way the chat does.
    """

    def __init__(self, model: str, *, max_length: int | None = None, batch_size: int = 16) -> None:
        _offline()
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise ConfigError("reranking needs sentence-transformers: pip install 'ragfr[rerank]'") from exc
        kwargs: dict[str, Any] = {"cache_folder": _st_home()}  # where require_reranker_files looked
        if max_length is not None:
            kwargs["max_length"] = max_length
        try:
            self._model: Any = CrossEncoder(model, device="cpu", **kwargs)
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
    where = "local path" if Path(model).exists() else f"Hugging Face cache ({hub_cache_dir()}) — offline"
    return ConfigError(
        f"reranker {model!r} could not be loaded from the {where}: {why}. "
        "Pre-cache the model (docs/runbooks/air-gapped-install.md) or search without --rerank"
    )


def resolve_model(explicit: str | None = None) -> str:
    """The cross-encoder to load: `explicit` (--reranker), else $RAGFR_RERANKER, else FRENCH_MODEL when the cache
    holds it.

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
    if not _in_cache(FRENCH_MODEL):
        cache = hub_cache_dir()
        raise ConfigError(
            f"no cross-encoder found: {ENV_VAR} is unset and the French cross-encoder {FRENCH_MODEL!r} is not in "
            f"the Hugging Face cache {cache} (${ST_HOME_VAR} when set, else the hub cache). `make reranker` "
            f"trains it, then `python -m ragfr_tools.reranker.package --out {cache}` puts it in the cache; or set "
            f"{ENV_VAR} or --reranker to a model directory or another cached name"
        )
    return FRENCH_MODEL


def _in_cache(name: str) -> bool:
    """Whether the offline cache a load by `name` reads (hub_cache_dir()) holds its config.json."""
    _offline()
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(name, "config.json", cache_dir=hub_cache_dir()), str)


def require_reranker_files(model: str) -> None:
    """Refuse a reranker whose files are absent before importing torch and sentence-transformers (~10 s).

    Only the presence of the model's config.json is checked, where the offline load would look for it; a
    present but broken model still fails in the load itself. With HF_HUB_OFFLINE=0 a load may download, so
    nothing is refused here.
    """
    _offline()
    if os.environ["HF_HUB_OFFLINE"].strip().lower() in ("0", "false", "no", "off"):
        return
    path = Path(model)
    if path.exists():
        if not (path / "config.json").is_file():
            raise _unloadable(model, f"no config.json in {path}")
        return
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        cached = try_to_load_from_cache(model, "config.json", cache_dir=hub_cache_dir())
    except HFValidationError as exc:
        raise _unloadable(model, str(exc).splitlines()[0]) from exc
    if not isinstance(cached, str):
        raise _unloadable(model, "not in the local cache (its config.json was not found)")


@lru_cache(maxsize=4)
def load_reranker(model: str) -> CrossEncoderReranker:
    return CrossEncoderReranker(model)
