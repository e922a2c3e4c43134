"""ragfr's hybrid retrieval: the ONE implementation used by the CLI, the Open WebUI patch and `ragfr eval`.

    lexical arm (French BM25, ANY term) ─┐
                                          ├─ RRF (k=60, ties by id) ─ cross-encoder top 10 -> 3 ─ hits
    vector arm (HNSW relaxed_order/exact) ─┘
Hard filters (collections, metadata, the embedding model) are one predicate applied inside both arms.
Everything the ranking depended on (settings, per-arm ranks and scores, shortfalls) comes back with it.
Each arm is one single-threaded statement; given a second connection, the two run at the same time.
The arms are ragfr.retrieval.arms.Arm: fusion, hits, reports, timings and metrics iterate over them.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict
from typing import Any, Protocol

import psycopg
from psycopg.pq import TransactionStatus

from ragfr import metrics
from ragfr.analysis.french import query_terms
from ragfr.embed.space import EmbeddingSpace, read_space
from ragfr.errors import ConfigError, DatabaseError, EmbeddingSpaceError
from ragfr.filters.grammar import Condition
from ragfr.filters.predicate import Filters
from ragfr.retrieval import evidence, semantic
from ragfr.retrieval.arms import BUILTIN, LEXICAL, SEMANTIC, Arm, ArmQuery, Ranked
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.fusion import rrf
from ragfr.retrieval.rerank import Reranker
from ragfr.retrieval.types import Hit, SearchResult
from ragfr.timing import elapsed_ms

log = logging.getLogger("ragfr.search")
MAX_QUERY_CHARS = 8_000
RUNBOOK = "docs/runbooks/embedding-migration.md"
# Lexical arms running beside a vector arm. The threads mostly wait on the server (psycopg releases the GIL).
_LEXICAL_WORKERS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="ragfr-lexical")
_ARM_MARGIN_S = 2.0


class SearchTimeoutError(DatabaseError):
    """A retrieval statement ran past SearchConfig.statement_timeout_ms and was cancelled."""


class QueryEmbedder(Protocol):
    model_id: str

    @property
    def dims(self) -> int: ...

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]: ...


def validate_query(query: str) -> str:
    if not isinstance(query, str):
        raise ConfigError("the query must be text")
    if "\x00" in query:
        raise ConfigError("the query contains a NUL byte")
    stripped = query.strip()
    if not stripped:
        raise ConfigError("empty query: ask a question or give keywords")
    if len(stripped) > MAX_QUERY_CHARS:
        raise ConfigError(f"query is {len(stripped)} characters long; the limit is {MAX_QUERY_CHARS}")
    return stripped


def search(
    conn: psycopg.Connection[Any],
    query: str,
    *,
    collections: Sequence[str],
    conditions: Sequence[Condition] = (),
    query_vector: Sequence[float] | None = None,
    embedder: QueryEmbedder | None = None,
    config: SearchConfig | None = None,
    reranker: Reranker | None = None,
    lexical_conn: psycopg.Connection[Any] | None = None,
    extra_arms: Sequence[Arm] = (),
) -> SearchResult:
    """Hybrid search over `collections` (see `_search`), counted and timed in ragfr.metrics. `extra_arms`:
    arms beyond the built-in two (ragfr.retrieval.arms), run on `conn` in the search's snapshot and fused
    like them."""
    arms = (*BUILTIN, *extra_arms)
    try:
        result = _search(
            conn, query, collections=collections, conditions=conditions, query_vector=query_vector,
            embedder=embedder, config=config, reranker=reranker, lexical_conn=lexical_conn, arms=arms,
        )
    except Exception as exc:
        metrics.search_failed(timeout=isinstance(exc, SearchTimeoutError))
        raise
    arm_ms = {a.metric_label: result.timings_ms[a.name] for a in arms if a.name in result.timings_ms}
    metrics.observe_search(result.timings_ms["total"], arm_ms, result.underfilled)
    return result


def _search(
    conn: psycopg.Connection[Any],
    query: str,
    *,
    collections: Sequence[str],
    conditions: Sequence[Condition] = (),
    query_vector: Sequence[float] | None = None,
    embedder: QueryEmbedder | None = None,
    config: SearchConfig | None = None,
    reranker: Reranker | None = None,
    lexical_conn: psycopg.Connection[Any] | None = None,
    arms: Sequence[Arm] = BUILTIN,
) -> SearchResult:
    """Hybrid search over `collections`. Raises RagfrError subclasses for anything the caller did wrong;
    the connection stays usable either way (all statements run in one transaction, rolled back on error).

    `lexical_conn`: a second connection to the same database, idle and used by nothing else during the
    call. The lexical arm then runs on it, in its own transaction, while the vector arm runs on `conn`, so
    a query costs the slower arm instead of both (docs/benchmarks.md). The results are the same: each arm
    reads one snapshot (REPEATABLE READ READ ONLY: the block-index lexical arm runs several statements, which
    under READ COMMITTED could each see a different set of chunks and report a partial score as exact)."""
    config = config or SearchConfig()
    query = validate_query(query)
    started = time.perf_counter()
    timings: dict[str, float] = {}
    # Every statement runs in a transaction that ends with it (a block, or an autocommit statement) so that a
    # caller is left idle, never "idle in transaction" (that would block `ragfr embeddings migrate`'s DDL).
    space = _read_space(conn)
    filters = Filters(tuple(collections), tuple(conditions), embedding_model=space.model)
    vector = _query_vector(query, query_vector, embedder, space) if config.semantic else None
    timings["embed"] = elapsed_ms(started)
    terms = query_terms(query) if config.lexical else []
    ran: dict[str, Ranked] = {}
    try:
        began = conn.info.transaction_status == TransactionStatus.IDLE  # else a savepoint in the caller's
        with conn.transaction():
            if began:
                conn.execute(_ONE_SNAPSHOT)
            searched, indexed = _rows_in(conn, filters.collections)
            settings = semantic.apply_settings(conn, config, indexed)
            # In a transaction of its own, only the exact fallback (a sort is its only plan) and _fetch (no
            # sort) follow the vector walk before COMMIT resets its settings.
            q = ArmQuery(query, terms, vector, filters, config, searched, indexed,
                         precision=settings["vector_index"], restore=not began)
            todo = [a for a in arms if a.applies(q)]
            # The lexical arm beside the vector arm, on the second connection, when there is one.
            aside = LEXICAL if LEXICAL in todo and SEMANTIC in todo and lexical_conn is not None else None
            pending: Future[tuple[Ranked, float]] | None = None
            if aside is not None and lexical_conn is not None:
                pending = _LEXICAL_WORKERS.submit(_in_own_transaction, aside, lexical_conn, q)
            try:
                for arm in todo:
                    if arm is not aside:
                        t = time.perf_counter()
                        ran[arm.name] = arm.run(conn, q)
                        timings[arm.name] = elapsed_ms(t)
            finally:
                if pending is not None and aside is not None:  # never leave lexical_conn busy behind the caller's back
                    # Its statement is cancelled by the server at statement_timeout; the margin covers the
                    # round trip. Past it the connection is unusable and the caller's pool discards it.
                    try:
                        ran[aside.name], timings[aside.name] = pending.result(
                            timeout=config.statement_timeout_ms / 1000 + _ARM_MARGIN_S)
                    except FutureTimeout:
                        raise SearchTimeoutError(
                            f"the lexical arm did not answer within {config.statement_timeout_ms} ms"
                        ) from None
            ran = {a.name: ran[a.name] for a in arms if a.name in ran}  # the arms' own order, however they ran
            fused = rrf({name: r.ids for name, r in ran.items()}, config.rrf_k)
            use_reranker = reranker is not None and config.rerank
            shown = fused[: config.rerank_top_n if use_reranker else config.k]
            rows = _fetch(conn, [doc_id for doc_id, _, _ in shown])
            stats = evidence.term_stats(conn, filters.collections, terms, searched)
    except psycopg.errors.QueryCanceled as exc:
        raise SearchTimeoutError(
            f"search cancelled after statement_timeout {config.statement_timeout_ms} ms "
            f"({exc.diag.message_primary or 'canceled'})"
        ) from exc
    except psycopg.Error as exc:
        raise DatabaseError(f"search failed: {exc.diag.message_primary or str(exc).strip()}") from exc
    hits = [
        Hit(
            id=doc_id, text=rows[doc_id][0] or "", metadata=rows[doc_id][1] or {}, collection_name=rows[doc_id][2],
            rrf_score=score, ranks=dict(ranks), scores={arm: ran[arm].scores[doc_id] for arm in ranks},
        )
        for doc_id, score, ranks in shown
        if doc_id in rows
    ]
    if reranker is not None and config.rerank and hits:
        t = time.perf_counter()
        for hit, s in zip(hits, reranker.score(query, [h.text for h in hits]), strict=True):
            hit.rerank_score = s
        hits.sort(key=lambda h: (-(h.rerank_score or 0.0), h.id))
        hits = hits[: config.rerank_keep]
        timings["rerank"] = elapsed_ms(t)
    features = evidence.compute(
        terms, stats, {name: evidence.ArmList(r.ids, r.scores) for name, r in ran.items()},
        [h.text for h in hits], fused[0][1] if fused else None, config.rrf_k)
    timings["total"] = elapsed_ms(started)
    settings.update(
        rrf_k=config.rrf_k, embedding_model=space.model, dims=space.dims, lexical_depth=config.lexical_depth,
        semantic_depth=config.semantic_depth, bm25_k1=config.bm25_k1, bm25_b=config.bm25_b,
        exact_threshold=config.exact_threshold, exact_cost_ratio=config.exact_cost_ratio,
        collection_exact_rows=config.collection_exact_rows,
        lexical_probe_cost_ratio=config.lexical_probe_cost_ratio,
        similarity_floor=config.similarity_floor,
        reranker=getattr(reranker, "model_id", None) if config.rerank else None, query_terms=terms,
    )
    reports = {name: r.report for name, r in ran.items()}
    short = [a for a in reports.values() if a.underfilled]
    result = SearchResult(
        query=query, hits=hits, underfilled=bool(short),
        underfill_reason="; ".join(a.reason or "" for a in short) or None,
        settings=settings, arms=reports, timings_ms=timings, evidence=features,
    )
    _log(result)
    return result


# First statement of a search's transaction: all its statements see the same rows (never a serialization
# failure: the transaction writes nothing).
_ONE_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"


def _read_space(conn: psycopg.Connection[Any]) -> EmbeddingSpace:
    # One statement: on an idle autocommit connection it is a transaction of its own (one round trip, not
    # BEGIN, SELECT, COMMIT); otherwise a transaction block keeps a non-autocommit caller idle afterwards.
    if conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE:
        return read_space(conn)
    with conn.transaction():
        return read_space(conn)


def _in_own_transaction(arm: Arm, conn: psycopg.Connection[Any], q: ArmQuery) -> tuple[Ranked, float]:
    """`arm` on the second connection, in a snapshot of its own, with the search's statement timeout."""
    t = time.perf_counter()
    with conn.transaction():
        conn.execute(_ONE_SNAPSHOT)
        conn.execute("SELECT set_config('statement_timeout', %s, true), " + semantic.NO_JIT,
                     (f"{q.config.statement_timeout_ms}ms",))
        ranked = arm.run(conn, q)
    return ranked, elapsed_ms(t)


def _query_vector(
    query: str, given: Sequence[float] | None, embedder: QueryEmbedder | None, space: EmbeddingSpace
) -> list[float]:
    if given is None:
        if embedder is None:
            raise ConfigError("the vector arm needs an embedder or a query vector (or disable it)")
        if embedder.model_id != space.model or embedder.dims != space.dims:
            metrics.space_mismatch("model")
            raise EmbeddingSpaceError(
                f"embedder {embedder.model_id} ({embedder.dims} dims) does not match the stored embedding space "
                f"{space.model} ({space.dims} dims); query with --embedder {space.model} or migrate ({RUNBOOK})"
            )
        given = embedder.embed_queries([query])[0]
    vector = [float(x) for x in given]
    if len(vector) != space.dims:
        metrics.space_mismatch("dimension")
        raise EmbeddingSpaceError(
            f"query vector has {len(vector)} dimensions, the stored embedding space {space.model} has {space.dims}; "
            f"vectors are never padded or truncated ({RUNBOOK})"
        )
    return vector


def _rows_in(conn: psycopg.Connection[Any], collections: Sequence[str]) -> tuple[int, int]:
    """(rows in `collections`, rows in every collection: what the one HNSW graph holds)."""
    row = conn.execute(
        "SELECT coalesce(sum(n_docs) FILTER (WHERE collection_name = ANY(%s)), 0), coalesce(sum(n_docs), 0)"
        " FROM ragfr_collection_stats",
        (list(collections),),
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def _fetch(conn: psycopg.Connection[Any], ids: list[str]) -> dict[str, tuple[str | None, dict[str, Any] | None, str]]:
    if not ids:
        return {}
    rows = conn.execute(
        "SELECT id, text, vmetadata, collection_name FROM document_chunk WHERE id = ANY(%s)", (ids,)
    ).fetchall()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _log(result: SearchResult) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info(json.dumps({
            "event": "search", "settings": result.settings, "hits": [h.id for h in result.hits],
            "underfilled": result.underfilled, "underfill_reason": result.underfill_reason,
            "timings_ms": result.timings_ms, "evidence": result.evidence,
            # how each arm gathered its candidates (strategy, counts, the declared filter's graph it walked)
            "arms": {name: asdict(report) for name, report in result.arms.items()},
        }, ensure_ascii=False, default=str))
