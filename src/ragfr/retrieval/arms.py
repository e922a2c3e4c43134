"""A retrieval arm, behind one protocol: from the question (as typed, its French terms, its vector), the
hard filters and the settings, it returns chunk ids in rank order with its own score for each, and an
ArmReport saying how it gathered them. Fusion (RRF), the hits (`Hit.ranks`, `Hit.scores`), the search log,
the metrics and the Open WebUI adapter iterate over the arms a search ran: a new arm is a class here (or a
caller's, passed as `extra_arms` to ragfr.retrieval.hybrid.search) and nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import psycopg

from ragfr.filters.predicate import Filters
from ragfr.retrieval import lexical, semantic
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.types import ArmReport
from ragfr.vector_index.precision import Precision


@dataclass(frozen=True)
class ArmQuery:
    text: str  # the question as typed (validated)
    terms: list[str]  # its French analysis (lexemes), empty when the lexical arm is off
    vector: list[float] | None  # its embedding in the stored space, None when the vector arm is off
    filters: Filters
    config: SearchConfig
    searched: int  # rows in the searched collections
    indexed: int  # rows in the one HNSW graph (every collection)
    precision: Precision  # what the live vector index stores
    restore: bool  # put back the session settings a walk changed (the caller's own transaction)


@dataclass(frozen=True)
class Ranked:
    """One arm's answer: ids best first, the arm's own score of each, and how it got them."""

    ids: list[str]
    scores: dict[str, float]
    report: ArmReport


class Arm(Protocol):
    name: str  # key of the arm in Hit.ranks / Hit.scores, SearchResult.arms and the timings
    metric_label: str  # its `arm` label in ragfr_search_arm_duration_seconds

    def applies(self, query: ArmQuery) -> bool: ...

    def run(self, conn: psycopg.Connection[Any], query: ArmQuery) -> Ranked: ...


class LexicalArm:
    """French BM25 over ANY of the question's terms (ragfr.retrieval.lexical)."""

    name = "lexical"
    metric_label = "lexical"

    def applies(self, query: ArmQuery) -> bool:
        return query.config.lexical

    def run(self, conn: psycopg.Connection[Any], query: ArmQuery) -> Ranked:
        found, report = lexical.bm25(conn, query.terms, query.filters, query.config, query.searched)
        report.searched = query.searched
        return Ranked([c.id for c in found], {c.id: c.score for c in found}, report)


class SemanticArm:
    """Cosine similarity on the HNSW graph, or exact when the filters pass few rows (ragfr.retrieval.semantic)."""

    name = "semantic"
    metric_label = "vector"

    def applies(self, query: ArmQuery) -> bool:
        return query.vector is not None

    def run(self, conn: psycopg.Connection[Any], query: ArmQuery) -> Ranked:
        assert query.vector is not None
        found, report = semantic.nearest(conn, query.vector, query.filters, query.config, query.searched,
                                         indexed=query.indexed, precision=query.precision, restore=query.restore)
        return Ranked([c.id for c in found], {c.id: c.similarity for c in found}, report)


LEXICAL = LexicalArm()
SEMANTIC = SemanticArm()
# The arms every search may run, in the order hits and reports list them.
BUILTIN: tuple[Arm, ...] = (LEXICAL, SEMANTIC)
