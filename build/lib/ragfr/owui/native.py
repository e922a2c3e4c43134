"""Adapter behind the patched `PgvectorClient.hybrid_search`: Open WebUI's arguments in, its result out.

Everything retrieval-related happens in `ragfr.retrieval.hybrid.search`; this module only translates:
  - Open WebUI's `filter` ({"k": v} / {"k": {"$in": [...]}}) -> ragfr conditions, applied in BOTH arms
    (stock 0.12.4 returns None on any filter and loads the whole collection on its legacy path);
  - `limit` (RAG_TOP_K: candidates handed to Open WebUI's own reranker) -> SearchConfig.k, with ragfr's
    cross-encoder off because Open WebUI reranks next (RAG_RERANKING_MODEL, RAG_TOP_K_RERANKER);
  - `hybrid_bm25_weight` 1.0 / 0.0 -> one arm only (Open WebUI then sends no vector / wants no keywords);
    between the two, ragfr fuses both arms with plain RRF and the weight is not used;
  - each hit -> one row of Open WebUI's SearchResult, its metadata extended with `ragfr_*` keys (component
    ranks and scores, underfill) that travel with the sources to the chat response.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import psycopg

from ragfr.db.connect import connect, normalize_dsn, redact
from ragfr.errors import DatabaseError, RagfrError
from ragfr.retrieval import hybrid
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.filters import from_mapping
from ragfr.retrieval.types import SearchResult

log = logging.getLogger("ragfr.owui")

_local = threading.local()


def session_dsn(session: Any) -> str:
    """The libpq DSN of the SQLAlchemy session Open WebUI's pgvector client uses (same database)."""
    url = session.get_bind().url
    return normalize_dsn(url.render_as_string(hide_password=False))


def _connection(dsn: str, role: str = "main") -> psycopg.Connection[Any]:
    # Two connections per worker thread (Open WebUI calls the client from asyncio.to_thread workers): the
    # vector arm runs on "main" while the lexical arm runs on "lexical" (hybrid.search's lexical_conn).
    cache: dict[tuple[str, str], psycopg.Connection[Any]] = getattr(_local, "connections", None) or {}
    _local.connections = cache
    conn = cache.get((dsn, role))
    if conn is None or conn.closed or conn.broken:
        conn = connect(dsn, autocommit=True)
        cache[(dsn, role)] = conn
    return conn


def _drop_connections(dsn: str) -> None:
    cache: dict[tuple[str, str], psycopg.Connection[Any]] = getattr(_local, "connections", None) or {}
    for key in [k for k in cache if k[0] == dsn]:
        cache.pop(key).close()


def search_config(limit: int, hybrid_bm25_weight: float, has_vector: bool) -> SearchConfig:
    k = max(1, int(limit))
    lexical = hybrid_bm25_weight > 0
    semantic = has_vector and hybrid_bm25_weight < 1
    if not (lexical or semantic):
        lexical = True  # weight 0 but no vector: the lexical arm is all there is
    base = SearchConfig()
    return base.with_(
        k=k,
        lexical=lexical,
        semantic=semantic,
        lexical_depth=max(base.lexical_depth, k),
        semantic_depth=max(base.semantic_depth, k),
        rerank=False,
    )


def ranks_metadata(result: SearchResult, index: int) -> dict[str, Any]:
    hit = result.hits[index]
    extra: dict[str, Any] = {
        "ragfr_rank": index + 1,
        "ragfr_rrf_score": hit.rrf_score,
        "ragfr_lexical_rank": hit.lexical_rank,
        "ragfr_semantic_rank": hit.semantic_rank,
        "ragfr_lexical_score": hit.lexical_score,
        "ragfr_semantic_score": hit.semantic_score,
        "ragfr_embedding_model": result.settings.get("embedding_model"),
        "ragfr_underfilled": result.underfilled,
    }
    if result.underfilled:
        extra["ragfr_underfill_reason"] = result.underfill_reason
    return extra


def to_owui(results: list[SearchResult], result_type: Any) -> Any:
    """One Open WebUI SearchResult row per query vector (or one row for a keyword-only query)."""
    return result_type(
        ids=[[h.id for h in r.hits] for r in results],
        documents=[[h.text for h in r.hits] for r in results],
        metadatas=[[{**(h.metadata or {}), **ranks_metadata(r, i)} for i, h in enumerate(r.hits)] for r in results],
        distances=[[h.rrf_score for h in r.hits] for r in results],
    )


def _search_all(
    conn: psycopg.Connection[Any],
    lexical_conn: psycopg.Connection[Any],
    *,
    collection_name: str,
    query: str,
    vectors: Sequence[Sequence[float]],
    filter: dict[str, Any] | None,
    limit: int,
    hybrid_bm25_weight: float,
) -> list[SearchResult]:
    conditions = from_mapping(filter)
    out = []
    wanted: list[Sequence[float] | None] = list(vectors) or [None]
    for vector in wanted:
        config = search_config(limit, hybrid_bm25_weight, vector is not None)
        result = hybrid.search(
            conn,
            query,
            collections=[collection_name],
            conditions=conditions,
            query_vector=vector if config.semantic else None,
            config=config,
            lexical_conn=lexical_conn,
        )
        if result.underfilled:
            log.warning(
                "ragfr: underfilled search in %s: %s hits for k=%s (%s)",
                collection_name, len(result.hits), config.k, result.underfill_reason,
            )
        out.append(result)
    return out


def hybrid_search(
    session: Any,
    result_type: Any,
    *,
    collection_name: str,
    query: str,
    vectors: Sequence[Sequence[float]] | None,
    filter: dict[str, Any] | None,
    limit: int,
    hybrid_bm25_weight: float,
    encrypted: bool,
) -> Any | None:
    """Open WebUI's SearchResult, or None to let Open WebUI fall back to its (French-tokenized) legacy path."""
    if encrypted:
        log.warning(
            "ragfr: PGVECTOR_PGCRYPTO encrypts document_chunk.text, which ragfr's French index cannot read; "
            "using Open WebUI's legacy hybrid search (French tokenizer) for %s", collection_name,
        )
        return None
    if not query or not query.strip():
        return None  # nothing to analyse: Open WebUI's legacy path handles vector-only calls
    weight = min(max(float(hybrid_bm25_weight), 0.0), 1.0)
    dsn = ""
    try:
        dsn = session_dsn(session)
        args: dict[str, Any] = dict(
            collection_name=collection_name, query=query, vectors=vectors or [], filter=filter,
            limit=limit, hybrid_bm25_weight=weight,
        )
        conns = (_connection(dsn), _connection(dsn, "lexical"))
        try:
            results = _search_all(*conns, **args)
        except (psycopg.OperationalError, DatabaseError):
            if not any(c.closed or c.broken for c in conns):
                raise
            _drop_connections(dsn)  # a server restart kills idle connections: retry once on fresh ones
            results = _search_all(_connection(dsn), _connection(dsn, "lexical"), **args)
    except RagfrError as err:
        log.error("ragfr: hybrid search refused for %s (%s); falling back to Open WebUI's legacy path: %s",
                  collection_name, redact(dsn), err)
        return None
    except Exception:
        log.exception("ragfr: hybrid search failed for %s (%s); falling back to Open WebUI's legacy path",
                      collection_name, redact(dsn))
        return None
    return to_owui(results, result_type)
