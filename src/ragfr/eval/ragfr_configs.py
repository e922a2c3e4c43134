"""The ragfr configurations: each one calls THE retrieval implementation, `ragfr.retrieval.hybrid.search`,
with only its arm switches changed. Nothing here ranks, fuses or reranks on its own."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragfr.eval.beir import Query
from ragfr.eval.configs import ConfigSpec, EvalContext, Ranker


@dataclass(frozen=True)
class Arms:
    lexical: bool
    semantic: bool
    rerank: bool


ARMS = {
    "ragfr-lexical": Arms(lexical=True, semantic=False, rerank=False),
    "ragfr-vector": Arms(lexical=False, semantic=True, rerank=False),
    "ragfr-hybrid": Arms(lexical=True, semantic=True, rerank=False),
    "ragfr-hybrid-rerank": Arms(lexical=True, semantic=True, rerank=True),
}


def _hybrid() -> Any:
    try:
        return importlib.import_module("ragfr.retrieval.hybrid")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("ragfr.retrieval"):
            return None
        raise


def search_config(hybrid: Any, arms: Arms, depth: int) -> Any:
    """The retrieval config for these arms, every other setting left at its production default."""
    return hybrid.SearchConfig(lexical=arms.lexical, semantic=arms.semantic, rerank=arms.rerank, top_k=depth)


class RagfrRanker:
    def __init__(self, name: str, ctx: EvalContext, hybrid: Any, arms: Arms) -> None:
        self.name = name
        self.ctx = ctx
        self.hybrid = hybrid
        self.config = search_config(hybrid, arms, ctx.depth)

    def rank(self, query: Query, query_vector: Sequence[float]) -> list[str]:
        result = self.hybrid.search(
            self.ctx.conn, query.text, collections=[self.ctx.collection], filters=dict(query.filters) or None,
            query_vector=list(query_vector), embedder=self.ctx.embedder, config=self.config,
        )
        return [str(hit.id) for hit in result.hits]

    def close(self) -> None:
        pass


def _factory(name: str) -> Any:
    def make(ctx: EvalContext) -> Ranker | str:
        hybrid = _hybrid()
        if hybrid is None:
            return "ragfr.retrieval.hybrid is not available in this checkout"
        arms = ARMS[name]
        if arms.rerank:
            reason = hybrid.reranker_unavailable_reason() if hasattr(hybrid, "reranker_unavailable_reason") else (
                "this retrieval build has no reranker probe")
            if reason:
                return f"no reranker model: {reason}"
        return RagfrRanker(name, ctx, hybrid, arms)

    return make


SPECS = [
    ConfigSpec("ragfr-lexical", "ragfr French BM25 arm alone", _factory("ragfr-lexical")),
    ConfigSpec("ragfr-vector", "ragfr HNSW vector arm alone", _factory("ragfr-vector")),
    ConfigSpec("ragfr-hybrid", "ragfr French BM25 + vector, RRF", _factory("ragfr-hybrid")),
    ConfigSpec("ragfr-hybrid-rerank", "ragfr hybrid + cross-encoder rerank", _factory("ragfr-hybrid-rerank")),
]
