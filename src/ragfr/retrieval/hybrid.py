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
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import psycopg
from psycopg.pq import TransactionStatus

from ragfr import metrics
from ragfr.analysis.french import query_terms
from ragfr.analysis.subject import absent_subject, subject_lexemes, subject_terms
from ragfr.embed.space import EmbeddingSpace, read_space
from ragfr.errors import ConfigError, DatabaseError, EmbeddingSpaceError
from ragfr.filters.grammar import Condition
from ragfr.filters.predicate import Filters
from ragfr.gate import features, relevance
from ragfr.retrieval import semantic
from ragfr.retrieval.arms import BUILTIN, TERMS, VECTOR, Arm, ArmQuery, Ranked, reads
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.fusion import rrf
from ragfr.retrieval.rerank import Reranker
from ragfr.retrieval.types import Hit, SearchResult
from ragfr.timing import elapsed_ms

log = logging.getLogger("ragfr.search")
MAX_QUERY_CHARS = 8_000
RUNBOOK = "docs/runbooks/embedding-migration.md"
# Arms running aside (Arm.aside), on the second connection. The threads mostly wait on the server (psycopg
# releases the GIL).
_ASIDE_WORKERS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="ragfr-aside")
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


@dataclass(frozen=True)
class _Request:
    """`search`'s arguments, passed down once."""

    query: str
    collections: Sequence[str]
    conditions: Sequence[Condition]
    query_vector: Sequence[float] | None
    embedder: QueryEmbedder | None
    config: SearchConfig
    reranker: Reranker | None
    second_conn: psycopg.Connection[Any] | None
    arms: tuple[Arm, ...]


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
    """Hybrid search over `collections`, counted and timed in ragfr.metrics. Raises RagfrError subclasses for
    anything the caller did wrong; the connection stays usable either way (all statements run in one
    transaction, rolled back on error).

    `lexical_conn`: a second connection to the same database, idle and used by nothing else during the
    call. The arms that run aside (Arm.aside: the lexical arm) then run on it, in their own transaction,
    while the others (the vector arm) run on `conn`, so a query costs the slower arm instead of both
    (docs/benchmarks.md). The results are the same: each connection reads one snapshot (REPEATABLE READ READ
    ONLY: the block-index lexical arm runs several statements, which under READ COMMITTED could each see a
    different set of chunks and report a partial score as exact).
    `extra_arms`: arms beyond the built-in ones (ragfr.retrieval.arms), fused like them."""
    arms = (*BUILTIN, *extra_arms)
    request = _Request(query, collections, conditions, query_vector, embedder, config or SearchConfig(), reranker,
                       lexical_conn, arms)
    try:
        result = _search(conn, request)
    except Exception as exc:
        metrics.search_failed(timeout=isinstance(exc, SearchTimeoutError))
        raise
    arm_ms = {a.metric_label: result.timings_ms[a.name] for a in arms if a.name in result.timings_ms}
    metrics.observe_search(result.timings_ms["total"], arm_ms, result.underfilled)
    return result


def _search(conn: psycopg.Connection[Any], req: _Request) -> SearchResult:
    config = req.config
    query = validate_query(req.query)
    started = time.perf_counter()
    timings: dict[str, float] = {}
    # Every statement runs in a transaction that ends with it (a block, or an autocommit statement) so that a
    # caller is left idle, never "idle in transaction" (that would block `ragfr embeddings migrate`'s DDL).
    space = _read_space(conn)
    filters = Filters(tuple(req.collections), tuple(req.conditions), embedding_model=space.model)
    vector = _query_vector(query, req.query_vector, req.embedder, space) if reads(config, VECTOR, req.arms) else None
    timings["embed"] = elapsed_ms(started)
    terms = query_terms(query) if reads(config, TERMS, req.arms) else []
    # The subject rule (ragfr.gate.subject): its lexemes' document frequencies come with the features' read.
    subjects = subject_terms(query)
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
            ran = _run_arms(conn, req, q, timings)
            fused = rrf({name: r.ids for name, r in ran.items()}, config.rrf_k)
            use_reranker = req.reranker is not None and config.rerank
            shown = fused[: config.rerank_top_n if use_reranker else config.k]
            rows = _fetch(conn, [doc_id for doc_id, _, _ in shown])
            stats = features.term_stats(conn, filters.collections, [*terms, *subject_lexemes(subjects)], searched)
    except psycopg.errors.QueryCanceled as exc:
        raise SearchTimeoutError(
            f"search cancelled after statement_timeout {config.statement_timeout_ms} ms "
            f"({exc.diag.message_primary or 'canceled'})"
        ) from exc
    except psycopg.Error as exc:
        raise DatabaseError(f"search failed: {exc.diag.message_primary or str(exc).strip()}") from exc
    names = tuple(a.name for a in req.arms)
    hits = [
        Hit(
            id=doc_id, text=rows[doc_id][0] or "", metadata=rows[doc_id][1] or {}, collection_name=rows[doc_id][2],
            rrf_score=score, ranks=dict(ranks), scores={arm: ran[arm].scores[doc_id] for arm in ranks}, arms=names,
        )
        for doc_id, score, ranks in shown
        if doc_id in rows
    ]
    hits = _rerank(query, hits, req.reranker, config, timings)
    evidence = features.compute(
        terms, stats, {a.evidence: features.ArmList(ran[a.name].ids, ran[a.name].scores)
                       for a in req.arms if a.evidence and a.name in ran},
        [h.text for h in hits], fused[0][1] if fused else None, config.rrf_k, n_arms=len(ran))
    absence = absent_subject(subjects, stats.df, [h.text for h in hits])
    shown_evidence = relevance.search_evidence(space.model, evidence,
                                               subject_absent=absence is not None and absence.strong)
    shown_relevance = relevance.passages(shown_evidence, [h.rrf_score for h in hits], fused[0][1] if fused else None)
    for hit, value in zip(hits, shown_relevance, strict=True):
        hit.relevance = value
    timings["total"] = elapsed_ms(started)
    settings.update(_settings(req, space, terms))
    reports = {name: r.report for name, r in ran.items()}
    short = [a for a in reports.values() if a.underfilled]
    result = SearchResult(
        query=query, hits=hits, underfilled=bool(short),
        underfill_reason="; ".join(a.reason or "" for a in short) or None,
        settings=settings, arms=reports, timings_ms=timings, evidence=evidence, absence=absence,
    )
    _log(result)
    return result


def _run_arms(conn: psycopg.Connection[Any], req: _Request, q: ArmQuery,
              timings: dict[str, float]) -> dict[str, Ranked]:
    """Every arm that applies, by name in the arms' own order, however they ran: the arms that run aside on
    the second connection (when there is one and an arm runs on `conn` beside them), the others on `conn`."""
    todo = [a for a in req.arms if a.applies(q)]
    second = req.second_conn
    aside = [a for a in todo if a.aside] if second is not None and any(not a.aside for a in todo) else []
    pending: Future[dict[str, tuple[Ranked, float]]] | None = None
    if aside and second is not None:
        pending = _ASIDE_WORKERS.submit(_in_own_transaction, aside, second, q)
    ran: dict[str, Ranked] = {}
    try:
        for arm in todo:
            if arm not in aside:
                t = time.perf_counter()
                ran[arm.name] = arm.run(conn, q)
                timings[arm.name] = elapsed_ms(t)
    finally:
        if pending is not None:  # never leave the second connection busy behind the caller's back
            # Its statement is cancelled by the server at statement_timeout; the margin covers the round
            # trip. Past it the connection is unusable and the caller's pool discards it.
            try:
                done = pending.result(timeout=q.config.statement_timeout_ms / 1000 + _ARM_MARGIN_S)
            except FutureTimeout:
                raise SearchTimeoutError(
                    f"the {', '.join(a.name for a in aside)} arm did not answer within "
                    f"{q.config.statement_timeout_ms} ms"
                ) from None
            for name, (ranked, ms) in done.items():
                ran[name], timings[name] = ranked, ms
    return {a.name: ran[a.name] for a in req.arms if a.name in ran}


def _rerank(query: str, hits: list[Hit], reranker: Reranker | None, config: SearchConfig,
            timings: dict[str, float]) -> list[Hit]:
    if reranker is None or not config.rerank or not hits:
        return hits
    t = time.perf_counter()
    for hit, s in zip(hits, reranker.score(query, [h.text for h in hits]), strict=True):
        hit.rerank_score = s
    hits.sort(key=lambda h: (-(h.rerank_score or 0.0), h.id))
    timings["rerank"] = elapsed_ms(t)
    return hits[: config.rerank_keep]


def _settings(req: _Request, space: EmbeddingSpace, terms: list[str]) -> dict[str, Any]:
    """What the ranking depended on, beside the session settings (ragfr.retrieval.semantic.apply_settings)."""
    config = req.config
    return dict(
        rrf_k=config.rrf_k, embedding_model=space.model, dims=space.dims,
        **{f"{a.name}_depth": a.depth(config) for a in req.arms},
        bm25_k1=config.bm25_k1, bm25_b=config.bm25_b,
        exact_threshold=config.exact_threshold, exact_cost_ratio=config.exact_cost_ratio,
        collection_exact_rows=config.collection_exact_rows,
        lexical_probe_cost_ratio=config.lexical_probe_cost_ratio,
        similarity_floor=config.similarity_floor,
        reranker=getattr(req.reranker, "model_id", None) if config.rerank else None, query_terms=terms,
    )


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


def _in_own_transaction(arms: Sequence[Arm], conn: psycopg.Connection[Any],
                        q: ArmQuery) -> dict[str, tuple[Ranked, float]]:
    """`arms` on the second connection, in a snapshot of their own, with the search's statement timeout."""
    out: dict[str, tuple[Ranked, float]] = {}
    with conn.transaction():
        conn.execute(_ONE_SNAPSHOT)
        conn.execute("SELECT set_config('statement_timeout', %s, true), " + semantic.NO_JIT,
                      (f"{q.config.statement_timeout_ms}ms",))
        for arm in arms:
            t = time.perf_counter()
            out[arm.name] = arm.run(conn, q), elapsed_ms(t)
    return out


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
