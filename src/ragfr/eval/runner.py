"""One evaluation run: ingest the corpus once, embed every query once, then rank every query with every
configuration and score the document rankings against the qrels."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

from ragfr.embed import Embedder
from ragfr.errors import ConfigError
from ragfr.eval.beir import Dataset, Query
from ragfr.eval.configs import DEFAULT_DEPTH, EvalContext
from ragfr.eval.corpus import Splitter, chunk_documents, documents_ranking, ensure_ingested
from ragfr.eval.metrics import QueryScores, mean_scores, score_query
from ragfr.eval.registry import registry
from ragfr.eval.slices import with_derived_tags
from ragfr.ingest.chunking import ChunkConfig
from ragfr.progress import Progress

QUERY_BATCH = 64
RANKING_KEPT = 10  # documents kept per query in the per-query file


@dataclass
class ConfigResult:
    name: str
    per_query: list[QueryScores]
    rankings: dict[str, list[str]]
    seconds: float
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def metrics(self) -> dict[str, float]:
        return mean_scores(self.per_query)


@dataclass
class EvalRun:
    dataset: Dataset
    queries: list[Query]
    collection: str
    embedder: str
    chunking: ChunkConfig
    results: dict[str, ConfigResult]
    skipped: dict[str, str]
    ingest: dict[str, int]

    def slice_metrics(self, tag: str) -> dict[str, dict[str, float]]:
        ids = {q.id for q in self.queries if tag in q.tags}
        return {name: mean_scores([s for s in r.per_query if s.query_id in ids]) for name, r in self.results.items()}


def select_queries(dataset: Dataset, limit: int | None, seed: int) -> list[Query]:
    """Judged queries only (a query without relevant documents cannot be scored), optionally a seeded
    random sample of them, in a stable order."""
    judged = [q for qid, q in sorted(dataset.queries.items())
              if any(g > 0 for g in dataset.qrels.get(qid, {}).values())]
    if not judged:
        raise ConfigError(f"dataset {dataset.name}: no query has a relevant document in qrels/test.tsv")
    if limit is not None:
        if limit < 1:
            raise ConfigError(f"--limit-queries must be at least 1, got {limit}")
        if limit < len(judged):
            judged = sorted(random.Random(seed).sample(judged, limit), key=lambda q: q.id)
    return judged


def resolve_configs(requested: list[str] | None) -> list[str]:
    known = list(registry())
    if not requested:
        return known
    unknown = [n for n in requested if n not in known]
    if unknown:
        raise ConfigError(f"unknown configuration(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    return list(dict.fromkeys(requested))


def run_eval(
    conn: psycopg.Connection[Any],
    dsn: str,
    dataset: Dataset,
    embedder: Embedder,
    *,
    configs: list[str] | None = None,
    chunking: ChunkConfig | None = None,
    limit_queries: int | None = None,
    seed: int = 0,
    depth: int = DEFAULT_DEPTH,
    progress: bool = True,
    splitter: Splitter | None = None,
    reranker: str | None = None,
) -> EvalRun:
    names = resolve_configs(configs)
    queries = with_derived_tags(dataset, select_queries(dataset, limit_queries, seed))
    chunking = chunking or ChunkConfig()
    collection, report = ensure_ingested(conn, dataset, embedder, chunking, progress=progress, splitter=splitter)
    chunk_to_doc = chunk_documents(conn, collection)
    conn.commit()
    vectors: list[list[float]] = []
    with Progress(len(queries), "embedding queries", enabled=progress, unit="query") as bar:
        for start in range(0, len(queries), QUERY_BATCH):
            batch = queries[start : start + QUERY_BATCH]
            vectors.extend(embedder.embed_queries([q.text for q in batch]))
            bar.update(len(batch))
    ctx = EvalContext(conn=conn, dsn=dsn, collection=collection, embedder=embedder, depth=depth, reranker=reranker)
    specs = registry()
    results: dict[str, ConfigResult] = {}
    skipped: dict[str, str] = {}
    for name in names:
        ranker = specs[name].factory(ctx)
        if isinstance(ranker, str):
            skipped[name] = ranker
            continue
        started = time.perf_counter()
        per_query: list[QueryScores] = []
        rankings: dict[str, list[str]] = {}
        try:
            with Progress(len(queries), name, enabled=progress, unit="query") as bar:
                for query, vector in zip(queries, vectors, strict=True):
                    docs = documents_ranking(ranker.rank(query, vector), chunk_to_doc)
                    per_query.append(score_query(query.id, docs, dataset.qrels[query.id]))
                    rankings[query.id] = docs[:RANKING_KEPT]
                    bar.update(1)
        finally:
            ranker.close()
        notes: dict[str, Any] = {"unanswered": ranker.unanswered} if hasattr(ranker, "unanswered") else {}
        # A reranked figure means nothing without the model that produced it.
        model = getattr(getattr(ranker, "reranker", None), "model_id", None)
        if model:
            notes["reranker"] = model
        results[name] = ConfigResult(name, per_query, rankings, time.perf_counter() - started, notes)
    ingest = {"documents": report.documents, "chunks": report.chunks, "inserted": report.inserted,
              "unchanged": report.unchanged}
    return EvalRun(dataset, queries, collection, embedder.model_id, chunking, results, skipped, ingest)
