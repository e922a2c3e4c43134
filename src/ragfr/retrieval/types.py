"""What a search returns: hits that keep every component score, and an honest account of shortfalls."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ragfr.analysis.subject import Absence
from ragfr.gate import subject


@dataclass
class Hit:
    id: str
    text: str
    metadata: dict[str, Any]
    collection_name: str
    rrf_score: float = 0.0
    # Per arm that returned the hit, by the arm's name: its 1-based rank there, and that arm's own score
    # (BM25, cosine similarity...: Arm.evidence). An arm that did not return it has no entry.
    ranks: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    rerank_score: float | None = None  # cross-encoder logit
    # What the analyst reads beside the passage, 0-1 (ragfr.gate.relevance): the gate's evidence for the search
    # scaled by the passage's fused score against the best; Open WebUI shows it as a percentage.
    relevance: float | None = None

    # The names of the arms the search had, on or off (ragfr.retrieval.arms), in their order: the JSON names every
    # one, with None where it did not return the hit, so a reader of `ragfr search --json` finds the same keys
    # whatever the arms found.
    arms: tuple[str, ...] = ()

    def arm_names(self) -> list[str]:
        return [*self.arms, *sorted(set(self.ranks) - set(self.arms))]

    def to_json(self) -> dict[str, Any]:
        """Flat, as `ragfr search --json` has always printed it: `<arm>_rank` then `<arm>_score` per arm."""
        arms = self.arm_names()
        return {
            "id": self.id, "text": self.text, "metadata": self.metadata, "collection_name": self.collection_name,
            "rrf_score": self.rrf_score,
            **{f"{arm}_rank": self.ranks.get(arm) for arm in arms},
            **{f"{arm}_score": self.scores.get(arm) for arm in arms},
            "rerank_score": self.rerank_score,
            "relevance": self.relevance,
        }


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
    # vector arm: the declared filter's graph (a partial HNSW index, ragfr.vector_index.graphs) that holds every
    # row the filters can pass, and its rows; the cost rule sized the walk by it. None: the shared graph.
    filter_index: str | None = None
    filter_index_rows: int | None = None
    # vector arm: what its answer depends on. "collections": every row of the searched collections scored
    # exactly (they hold at most collection_exact_rows chunks), nothing else in the database can change it;
    # "filter": exact over the rows the filters pass (the cost rule); "collection graph": a walk of the
    # searched collection's own graph (nothing else in the database can change it either); "shared graph" /
    # "filter graph": a walk of the graph every collection shares or of a declared filter's own graph;
    # "per collection": several collections searched one by one in those isolated ways (see `parts`).
    scope: str | None = None
    # vector arm, "collection graph": hnsw.ef_search of that walk, set by the collection's own size (the
    # settings' ef_search is the shared graph's)
    ef_search: int | None = None
    # vector arm, scope "per collection": each searched collection's own report (its name under
    # "collection"), the collections having been searched one by one and their candidates merged
    parts: list[dict[str, Any]] | None = None


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    underfilled: bool
    underfill_reason: str | None
    settings: dict[str, Any]
    arms: dict[str, ArmReport] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    # ragfr.gate.features.FEATURES of this search (cosines, BM25 against the words' rarity, rare-word
    # coverage, arm agreement): what the fitted gate reads
    evidence: dict[str, float] = field(default_factory=dict)
    # The question's subject that no searched document names, or none of the top passages (ragfr.gate.subject):
    # what the gate's subject rule reads
    absence: Absence | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "results": [h.to_json() for h in self.hits],
            "underfilled": self.underfilled,
            "underfill_reason": self.underfill_reason,
            "settings": self.settings,
            "arms": {k: asdict(v) for k, v in self.arms.items()},
            "timings_ms": self.timings_ms,
            "evidence": self.evidence,
            "absent_subject": subject.to_json(self.absence),
        }
