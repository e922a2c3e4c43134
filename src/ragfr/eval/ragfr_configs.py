"""The ragfr configurations: each one calls THE retrieval implementation, `ragfr.retrieval.hybrid.search`,
with only its arm switches changed (ragfr.retrieval.arms: one configuration per arm, then all of them).
Nothing here ranks, fuses or reranks on its own."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragfr.errors import RagfrError
from ragfr.eval.beir import Query
from ragfr.eval.configs import ConfigSpec, EvalContext, Ranker
from ragfr.filters.grammar import from_mapping
from ragfr.retrieval import hybrid
from ragfr.retrieval.arms import BUILTIN, Arm, only
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.rerank import Reranker, load_reranker, require_reranker_files, resolve_model


@dataclass(frozen=True)
class Arms:
    on: tuple[Arm, ...]  # the arms switched on, the others off
    rerank: bool


HYBRID = "ragfr-hybrid"
RERANK = "ragfr-hybrid-rerank"


def alone(arm: Arm) -> str:
    return f"ragfr-{arm.metric_label}"


# One configuration per arm alone, `ragfr-<its label>` (ragfr-lexical, ragfr-vector), then all of them fused,
# then fused and reranked.
ARMS = {
    **{alone(arm): Arms((arm,), rerank=False) for arm in BUILTIN},
    HYBRID: Arms(BUILTIN, rerank=False),
    RERANK: Arms(BUILTIN, rerank=True),
}
# What `ragfr eval --update-baseline` records by default: ragfr's own configurations without the reranker.
GATED = tuple(name for name, arms in ARMS.items() if not arms.rerank)


def search_config(arms: Arms, depth: int) -> SearchConfig:
    """Production defaults except the arm switches and the depth: each arm and the fused list go `depth`
    chunks deep (production: 50 per arm, 10 hits) so that recall@50/100 can be measured; RRF over deeper
    arms can only add candidates below the ones production sees, so the top ranks are production's."""
    base = SearchConfig()
    return only(base, arms.on, depth_at_least=depth).with_(
        rerank=arms.rerank, k=depth, rerank_keep=depth if arms.rerank else base.rerank_keep)


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
    *(ConfigSpec(alone(arm), f"ragfr {arm.description} arm alone", _factory(alone(arm))) for arm in BUILTIN),
    ConfigSpec(HYBRID, f"ragfr {' + '.join(arm.description for arm in BUILTIN)}, RRF", _factory(HYBRID)),
    ConfigSpec(RERANK, "ragfr hybrid + cross-encoder rerank", _factory(RERANK)),
]
