"""The ragfr configurations: each one calls THE retrieval implementation, `ragfr.retrieval.hybrid.search`,
with only its arm switches changed. Nothing here ranks, fuses or reranks on its own."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragfr.errors import RagfrError
from ragfr.eval.beir import Query
from ragfr.eval.configs import ConfigSpec, EvalContext, Ranker
from ragfr.filters.grammar import from_mapping
from ragfr.retrieval import hybrid
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.rerank import Reranker, load_reranker, require_reranker_files, resolve_model


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


def search_config(arms: Arms, depth: int) -> SearchConfig:
    """Production defaults except the arm switches and the depth: each arm and the fused list go `depth`
    chunks deep (production: 50 per arm, 10 hits) so that recall@50/100 can be measured; RRF over deeper
    arms can only add candidates below the ones production sees, so the top ranks are production's."""
    base = SearchConfig()
    return base.with_(lexical=arms.lexical, semantic=arms.semantic, rerank=arms.rerank, k=depth,
                      lexical_depth=max(depth, base.lexical_depth), semantic_depth=max(depth, base.semantic_depth),
                      rerank_keep=depth if arms.rerank else base.rerank_keep)


class RagfrRanker:
    def __init__(self, name: str, ctx: EvalContext, arms: Arms, reranker: Reranker | None = None) -> None:
        self.name = name
        self.ctx = ctx
        self.reranker = reranker
        self.config = search_config(arms, ctx.depth)

    def rank(self, query: Query, query_vector: Sequence[float]) -> list[str]:
        result = hybrid.search(
            self.ctx.conn, query.text, collections=[self.ctx.collection],
            conditions=from_mapping(dict(query.filters)), query_vector=list(query_vector),
            embedder=self.ctx.embedder, config=self.config, reranker=self.reranker,
        )
        return [str(hit.id) for hit in result.hits]

    def close(self) -> None:
        pass


def _factory(name: str) -> Callable[[EvalContext], Ranker | str]:
    def make(ctx: EvalContext) -> Ranker | str:
        arms = ARMS[name]
        reranker = None
        if arms.rerank:
            try:
                model = resolve_model(ctx.reranker)
                require_reranker_files(model)  # an absent model is skipped without importing torch
                reranker = load_reranker(model)
            except RagfrError as exc:
                return f"no reranker model: {exc}"
        return RagfrRanker(name, ctx, arms, reranker)

    return make


SPECS = [
    ConfigSpec("ragfr-lexical", "ragfr French BM25 arm alone", _factory("ragfr-lexical")),
    ConfigSpec("ragfr-vector", "ragfr HNSW vector arm alone", _factory("ragfr-vector")),
    ConfigSpec("ragfr-hybrid", "ragfr French BM25 + vector, RRF", _factory("ragfr-hybrid")),
    ConfigSpec("ragfr-hybrid-rerank", "ragfr hybrid + cross-encoder rerank", _factory("ragfr-hybrid-rerank")),
]
