"""What a search returns: hits that keep every component score, and an honest account of shortfalls."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Hit:
    id: str
    text: str
    metadata: dict[str, Any]
    collection_name: str
    rrf_score: float = 0.0
    lexical_rank: int | None = None  # 1-based rank in the lexical arm, None when that arm did not return it
    semantic_rank: int | None = None
    lexical_score: float | None = None  # BM25
    semantic_score: float | None = None  # cosine similarity, 1 - cosine distance
    rerank_score: float | None = None  # cross-encoder logit

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ArmReport:
    """How one arm gathered its candidates; `underfilled` only when a cap (not the data) cut it short."""

    name: str
    depth: int
    returned: int = 0
    # lexical: "bm25" (block index), "bm25-filter-first" or "ts_rank_cd"; vector: "hnsw" or "exact" (filter
    # first, then score every passing row)
    strategy: str = ""
    passing: int | None = None  # rows passing the hard filters, when counted (bounded by the exact threshold)
    threshold: int | None = None  # most passing rows the arm filters first for (the cost rule's choice)
    estimated: int | None = None  # the planner's estimate of the passing rows, when it made one
    searched: int | None = None  # rows in the searched collections
    underfilled: bool = False
    reason: str | None = None
    floor_cut: int = 0  # rows dropped below the similarity floor
    # vector arm, "hnsw": hnsw.iterative_scan of its walk ("off" when no row could fail the filters)
    iterative_scan: str | None = None
    # vector arm: the declared filter's graph (a partial HNSW index, ragfr.db.filter_indexes) that holds every
    # row the filters can pass, and its rows; the cost rule sized the walk by it. None: the shared graph.
    filter_index: str | None = None
    filter_index_rows: int | None = None


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    underfilled: bool
    underfill_reason: str | None
    settings: dict[str, Any]
    arms: dict[str, ArmReport] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "results": [h.to_json() for h in self.hits],
            "underfilled": self.underfilled,
            "underfill_reason": self.underfill_reason,
            "settings": self.settings,
            "arms": {k: asdict(v) for k, v in self.arms.items()},
            "timings_ms": self.timings_ms,
        }
