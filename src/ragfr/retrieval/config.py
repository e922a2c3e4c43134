"""Every retrieval knob in one place, with the reason for its default."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ragfr.errors import ConfigError
from ragfr.vector_index.graphs import COLLECTION_ROWS

# Where a knowledge base stops being scored exactly (SearchConfig.collection_exact_rows) and starts being
# walked on its own graph, which `ragfr filter-index sync` builds above that same limit.
COLLECTION_EXACT_ROWS = COLLECTION_ROWS


@dataclass(frozen=True)
class SearchConfig:
    k: int = 10  # hits returned (after rerank: `rerank_keep`)
    lexical: bool = True
    semantic: bool = True
    # Each arm's depth is its own, independent of k: RRF needs candidates beyond the final cut-off.
    lexical_depth: int = 50
    semantic_depth: int = 50
    rrf_k: int = 60  # the constant of Cormack et al.; also Open WebUI's
    # "bm25" (default, ADR 0003) or "ts_rank_cd" (kept only to measure BM25 against it).
    lexical_ranking: str = "bm25"
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    # hnsw.ef_search, pinned and logged per query. None (default, "auto"): set by the graph's size
    # (ef_search_for), so recall holds as the corpus grows; a number pins it whatever the size.
    ef_search: int | None = None
    # hnsw.iterative_scan budget: past this many visited tuples a filtered scan stops and reports underfill.
    max_scan_tuples: int = 20_000
    # Filter first: when at most this many rows pass the hard filters, score them all exactly instead of
    # walking the HNSW graph. None (default): the cost rule of ragfr.retrieval.strategy sets it per query
    # from the graph's size; a number pins it (tests use that to force one strategy).
    exact_threshold: int | None = None
    # A search over collections holding at most this many chunks in all scores every one of their vectors
    # exactly, whatever the cost rule says: the shared HNSW graph holds every collection, so a walk's answer
    # for one knowledge base moves when another one is ingested beside it (issue 39: 37 of 535 top 10s), and
    # exact scoring of the collection's own rows cannot. The cost at the limit is in
    # docs/benchmarks.md#current-figures ("vector arm over one knowledge base"). 0 turns the rule off, and so does a
    # pinned exact_threshold (it pins the whole choice of strategy).
    collection_exact_rows: int = COLLECTION_EXACT_ROWS
    # The cost rule's r: one HNSW candidate visit costs r exactly scored rows (measured:
    # docs/bench/filter-cost-lowrank-100k-halfvec.json).
    exact_cost_ratio: float = 10.0
    # The lexical arm's cost rule (ragfr.retrieval.strategy): one primary-key probe of the block index's walk
    # costs r rows scored filter-first (measured: `python -m ragfr_tools.bench.lexfilter`,
    # docs/bench/lexical-filter-cost-100k.json).
    lexical_probe_cost_ratio: float = 5.0
    # Cosine similarity below which a semantic candidate is noise; None keeps all.
    similarity_floor: float | None = None
    rerank: bool = True
    rerank_top_n: int = 10  # fused candidates the cross-encoder sees
    rerank_keep: int = 3  # what it keeps
    # Every retrieval statement is cancelled past this (SET LOCAL statement_timeout, lock waits included):
    # a search that cannot answer in time says so instead of holding a connection and a chat request.
    statement_timeout_ms: int = 10_000

    def __post_init__(self) -> None:
        if self.ef_search is not None and (type(self.ef_search) is not int or not 1 <= self.ef_search <= 1000):
            raise ConfigError(f"ef_search must be None (auto) or an integer from 1 to 1000 (pgvector's limit), "
                              f"got {self.ef_search!r}")
        for name in ("k", "lexical_depth", "semantic_depth", "rrf_k", "max_scan_tuples",
                     "rerank_top_n", "rerank_keep", "statement_timeout_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if type(self.collection_exact_rows) is not int or self.collection_exact_rows < 0:
            raise ConfigError(f"collection_exact_rows must be an integer >= 0, got {self.collection_exact_rows!r}")
        if self.exact_threshold is not None and (not isinstance(self.exact_threshold, int) or self.exact_threshold < 1):
            raise ConfigError(f"exact_threshold must be a positive integer or None, got {self.exact_threshold!r}")
        for name in ("exact_cost_ratio", "lexical_probe_cost_ratio"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)!r}")
        if not (self.lexical or self.semantic):
            raise ConfigError("at least one arm (lexical or semantic) must be enabled")
        if self.lexical_ranking not in ("bm25", "ts_rank_cd"):
            raise ConfigError(f"lexical_ranking must be 'bm25' or 'ts_rank_cd', got {self.lexical_ranking!r}")
        if not 0 <= self.bm25_b <= 1 or self.bm25_k1 < 0:
            raise ConfigError("bm25_b must be in [0, 1] and bm25_k1 >= 0")
        if self.similarity_floor is not None and not -1 <= self.similarity_floor <= 1:
            raise ConfigError("similarity_floor is a cosine similarity in [-1, 1]")

    def with_(self, **changes: Any) -> SearchConfig:
        return replace(self, **changes)

    def ef_search_at(self, indexed: int) -> int:
        """hnsw.ef_search for a graph of `indexed` rows: the pinned value, else the size rule."""
        return self.ef_search if self.ef_search is not None else ef_search_for(indexed)


# The size rule: the smallest ef_search whose recall@10 of the vector arm was >= 0.95 at the largest size of
# its tier (make bench-scale, lowrank geometry; the recall by ef_search and size is in
# docs/benchmarks.md#current-figures). 100 falls below 0.95 above 300k rows; 200 holds it at 1M but nearly
# doubles the vector arm at 100k, so 100 up to 300k keeps small corpora fast. Nothing above 1M was measured:
# 200 stays.
EF_SEARCH_TIERS: tuple[tuple[int, int], ...] = ((300_000, 100),)
EF_SEARCH_ABOVE = 200


def ef_search_for(indexed: int) -> int:
    for most_rows, ef_search in EF_SEARCH_TIERS:
        if indexed <= most_rows:
            return ef_search
    return EF_SEARCH_ABOVE


def parse_ef_search(value: object) -> int | None:
    """`auto` (or None) -> None, the size rule; else an integer in 1..1000 (pgvector's limit)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    try:
        number = int(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else None
    except ValueError:
        number = None
    if number is None or not 1 <= number <= 1000:
        raise ConfigError(f"ef_search must be 'auto' or an integer from 1 to 1000 (pgvector's limit), got {value!r}")
    return number
