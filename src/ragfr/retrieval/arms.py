"""A retrieval arm, behind one protocol: from the question (as typed, its French terms, its vector), the
hard filters and the settings, it returns chunk ids in rank order with its own score for each, and an
ArmReport saying how it gathered them. Fusion (RRF), the hits (`Hit.ranks`, `Hit.scores`), the search log,
the metrics, `ragfr search`, the eval configurations, the Open WebUI adapter and the bench iterate over the
arms (BUILTIN, or the arms a search ran) and read each one's name, label, switch, depth and connection from
its object: a new arm is a class here added to BUILTIN (or a caller's, passed as `extra_arms` to
ragfr.retrieval.hybrid.search), and nothing else changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg

from ragfr import metrics
from ragfr.filters.predicate import Filters
from ragfr.gate import features
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
    """Everything ragfr knows about an arm is on its object: every consumer (fusion, the hits and their JSON,
    the search log, the metrics, `ragfr search`'s flags and columns, the eval configurations, the Open WebUI
    adapter, the bench) reads it from here instead of spelling it."""

    name: str  # THE name: key in Hit.ranks / Hit.scores (`<name>_rank` in JSON), SearchResult.arms, timings
    # Its name outside ragfr's results: the `arm` label of ragfr_search_arm_duration_seconds and the eval
    # configuration `ragfr-<label>`. The vector arm keeps "vector" there: dashboards, alerts and
    # eval/baselines.json name it so.
    metric_label: str
    description: str  # what it ranks by, for `--<name>-only`'s help and the eval configuration's
    short: str  # its column in `ragfr search`'s table
    # What it reads of the question: TERMS (ArmQuery.terms, analysed only when an arm reading them is on),
    # VECTOR (ArmQuery.vector, embedded only then; Open WebUI sends it) or TEXT.
    reads: str
    # Runs on the search's second connection, when the caller gives one, beside the arms on the first.
    aside: bool
    # Which evidence its scores are (ragfr.gate.features.COSINE / BM25), or None: read by no feature.
    evidence: str | None

    def enabled(self, config: SearchConfig) -> bool: ...

    def depth(self, config: SearchConfig) -> int: ...

    def changes(self, config: SearchConfig, *, on: bool, depth_at_least: int = 1) -> dict[str, Any]: ...

    def applies(self, query: ArmQuery) -> bool: ...

    def run(self, conn: psycopg.Connection[Any], query: ArmQuery) -> Ranked: ...


# What an arm reads of the question (Arm.reads).
TERMS = "terms"  # its French lexemes (ragfr.analysis.french.query_terms)
VECTOR = "vector"  # its embedding in the stored space
TEXT = "text"  # the question as typed


class ArmBase:
    """Defaults for an arm: on whenever it can run, `config.k` deep, on the first connection, no evidence
    feature. An arm with a switch and a depth in SearchConfig names those fields (`switch`, `depth_field`)."""

    name: str
    metric_label: str
    description = ""
    short = ""
    reads = TEXT
    aside = False
    evidence: str | None = None
    switch: str | None = None  # its on/off field in SearchConfig
    depth_field: str | None = None  # its depth field in SearchConfig

    def enabled(self, config: SearchConfig) -> bool:
        return bool(getattr(config, self.switch)) if self.switch else True

    def depth(self, config: SearchConfig) -> int:
        return int(getattr(config, self.depth_field)) if self.depth_field else config.k

    def changes(self, config: SearchConfig, *, on: bool, depth_at_least: int = 1) -> dict[str, Any]:
        """The SearchConfig changes that switch this arm `on` (or off), at least `depth_at_least` deep."""
        changes: dict[str, Any] = {}
        if self.switch:
            changes[self.switch] = on
        if self.depth_field:
            changes[self.depth_field] = max(self.depth(config), depth_at_least)
        return changes

    def applies(self, query: ArmQuery) -> bool:
        return self.enabled(query.config) and (self.reads != VECTOR or query.vector is not None)


class LexicalArm(ArmBase):
    """French BM25 over ANY of the question's terms (ragfr.retrieval.lexical)."""

    name = "lexical"
    metric_label = "lexical"
    switch = "lexical"
    depth_field = "lexical_depth"
    description = "French BM25"
    short = "lex"
    reads = TERMS
    aside = True  # the vector arm's walk is the slower: the lexical arm runs beside it
    evidence: str | None = features.BM25

    def run(self, conn: psycopg.Connection[Any], query: ArmQuery) -> Ranked:
        found, report = lexical.bm25(conn, query.terms, query.filters, query.config, query.searched)
        report.searched = query.searched
        return Ranked([c.id for c in found], {c.id: c.score for c in found}, report)


class SemanticArm(ArmBase):
    """Cosine similarity on the HNSW graph, or exact when the filters pass few rows (ragfr.retrieval.semantic)."""

    name = "semantic"
    switch = "semantic"
    metric_label = "vector"
    depth_field = "semantic_depth"
    description = "HNSW vector"
    short = "sem"
    reads = VECTOR
    evidence: str | None = features.COSINE

    def run(self, conn: psycopg.Connection[Any], query: ArmQuery) -> Ranked:
        assert query.vector is not None
        found, report = semantic.nearest(conn, query.vector, query.filters, query.config, query.searched,
                                         indexed=query.indexed, precision=query.precision, restore=query.restore)
        return Ranked([c.id for c in found], {c.id: c.similarity for c in found}, report)


LEXICAL = LexicalArm()
SEMANTIC = SemanticArm()
# The arms every search may run, in the order hits and reports list them. A new arm: a class above, added here.
BUILTIN: tuple[Arm, ...] = (LEXICAL, SEMANTIC)
metrics.declare_arms(a.metric_label for a in BUILTIN)


def by_name(name: str, arms: Sequence[Arm] = BUILTIN) -> Arm:
    for arm in arms:
        if arm.name == name:
            return arm
    raise KeyError(name)


def reads(config: SearchConfig, what: str, arms: Sequence[Arm] = BUILTIN) -> bool:
    """Whether an arm `config` switches on reads `what` (Arm.reads): is the question to be embedded, analysed?"""
    return any(arm.reads == what and arm.enabled(config) for arm in arms)


def only(config: SearchConfig, on: Iterable[Arm], depth_at_least: int = 1) -> SearchConfig:
    """`config` with exactly the arms `on` switched on (the other built-in arms off), each at least
    `depth_at_least` deep."""
    wanted = set(map(id, on))
    changes: dict[str, Any] = {}
    for arm in BUILTIN:
        changes.update(arm.changes(config, on=id(arm) in wanted, depth_at_least=depth_at_least))
    return config.with_(**changes)
