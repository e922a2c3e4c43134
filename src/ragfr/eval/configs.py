"""What every compared configuration provides (the registry of names lives in `ragfr.eval.registry`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg

from ragfr.embed import Embedder
from ragfr.eval.beir import Query

# Chunks asked of every configuration per query: enough that, after folding chunks into documents,
# recall@100 is still measured on (at least) 100 documents for a corpus of short documents.
DEFAULT_DEPTH = 200


@dataclass
class EvalContext:
    conn: psycopg.Connection[Any]
    dsn: str
    collection: str
    embedder: Embedder
    depth: int = DEFAULT_DEPTH
    # The cross-encoder of the reranking configuration (`ragfr eval --reranker`); None: the same default
    # as `ragfr search --rerank` ($RAGFR_RERANKER, else ragfr.retrieval.rerank.FRENCH_MODEL from the cache).
    reranker: str | None = None


class Ranker(Protocol):
    name: str

    def rank(self, query: Query, query_vector: Sequence[float]) -> list[str]:
        """Chunk ids of the collection, best first, at most ctx.depth of them."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ConfigSpec:
    name: str
    description: str
    # Returns a ready ranker, or a string: the reason this configuration is skipped in this run.
    factory: Callable[[EvalContext], Ranker | str]
