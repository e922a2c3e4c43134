"""Adapter behind the patched `PgvectorClient.hybrid_search`: Open WebUI's arguments in, its result out.

Everything retrieval-related happens in `ragfr.retrieval.hybrid.search`; this module only translates:
  - Open WebUI's `filter` ({"k": v} / {"k": {"$in": [...]}}) -> ragfr conditions, applied in BOTH arms
    (stock 0.12.4 returns None on any filter and loads the whole collection on its legacy path);
  - `limit` (RAG_TOP_K: candidates handed to Open WebUI's own reranker) -> SearchConfig.k, with ragfr's
    cross-encoder off because Open WebUI reranks next (RAG_RERANKING_MODEL, RAG_TOP_K_RERANKER);
  - `hybrid_bm25_weight` 1.0 / 0.0 -> one arm only (Open WebUI then sends no vector / wants no keywords);
    between the two, ragfr fuses both arms with plain RRF and the weight is not used;
  - each hit -> one row of Open WebUI's SearchResult, its stored metadata stripped of `ragfr_*` keys and
    extended with the search's own (ragfr.retrieval.passage_keys: component ranks and scores, underfill),
    which travel with the sources to the chat's evidence gate and the chat response.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from ragfr import metrics
from ragfr.db.connect import normalize_dsn, redact
from ragfr.db.vmetadata import without_reserved
from ragfr.errors import ConfigError, RagfrError, first_line
from ragfr.filters.grammar import from_mapping
from ragfr.gate import subject
from ragfr.owui.runtime import provenance
from ragfr.owui.runtime.errors import SearchUnavailable
from ragfr.retrieval import hybrid
from ragfr.retrieval import passage_keys as keys
from ragfr.retrieval.arms import BUILTIN, TERMS, VECTOR, only, reads
from ragfr.retrieval.config import SearchConfig, parse_ef_search
from ragfr.retrieval.hybrid import SearchTimeoutError
from ragfr.retrieval.types import SearchResult

log = logging.getLogger("ragfr.owui")

# Bounded connections: per Open WebUI worker process, one pool for the search's first connection (the arms
# on it, the rest of the search) and one for its second (the arms that run aside, Arm.aside), each at most
# POOL_SIZE connections. A search takes a "main" connection, then an "aside" one, always in that order, so
# two searches can never wait on each other.
# Open WebUI runs searches in asyncio.to_thread workers (up to ~40 threads): without a bound each thread
# kept its own two connections, 40-64 per replica against the server's max_connections of 100.
POOL_SIZE = int(os.environ.get("RAGFR_OWUI_POOL_SIZE", "4"))
# How long a search waits for a free connection before it gives up with no results (and says why).
POOL_WAIT_S = float(os.environ.get("RAGFR_OWUI_POOL_WAIT_S", "10"))
# A search that found no free connection first asks whether the database answers at all (unavailable, not busy).
PROBE_TIMEOUT_S = 2
STATEMENT_TIMEOUT_MS = int(os.environ.get("RAGFR_STATEMENT_TIMEOUT_MS", "10000"))
# hnsw.ef_search of the chat's searches (pinned per search and logged with it): "auto" (default) sets it by
# the graph's size, as recall@10 falls with the corpus size at a fixed value (ragfr.retrieval.config).
EF_SEARCH = parse_ef_search(os.environ.get("RAGFR_EF_SEARCH", "auto"))
_pools: dict[tuple[str, str], ConnectionPool] = {}
_pools_lock = threading.Lock()


def session_dsn(session: Any) -> str:
    """The libpq DSN of the SQLAlchemy session Open WebUI's pgvector client uses (same database).

    The query (e.g. `options=-c ragfr.writer_model=...`, migration 0009) is re-encoded with %20 for spaces:
    SQLAlchemy renders them as `+`, which libpq does not decode ("invalid configuration parameter name
    "+ragfr.writer_model""), and every ragfr connection would fail."""
    dsn, _, query = session.get_bind().url.render_as_string(hide_password=False).partition("?")
    if query:
        dsn += "?" + urlencode(parse_qsl(query, keep_blank_values=True), quote_via=quote)
    return normalize_dsn(dsn)


def pool(dsn: str, role: str) -> ConnectionPool:
    with _pools_lock:
        found = _pools.get((dsn, role))
        if found is None:
            found = ConnectionPool(
                # check: a connection a server restart killed while idle is replaced, never handed out.
                dsn, min_size=0, max_size=POOL_SIZE, timeout=POOL_WAIT_S, open=True,
                check=ConnectionPool.check_connection,
                name=f"ragfr-{role}", kwargs={"autocommit": True, "application_name": f"ragfr-owui-{role}"},
            )
            _pools[(dsn, role)] = found
        return found


def no_answer(dsn: str) -> str:
    """Why a fresh connection to `dsn` fails within PROBE_TIMEOUT_S (refused, lost, timed out, refused at
    login), or "" when the database answers."""
    try:
        psycopg.connect(dsn, connect_timeout=PROBE_TIMEOUT_S, autocommit=True).close()
    except psycopg.OperationalError as err:
        return first_line(err)
    return ""


def search_config(limit: int, hybrid_bm25_weight: float, has_vector: bool) -> SearchConfig:
    """Open WebUI's weight picks the arms by what they read: 1.0 keywords only (the arms reading the terms),
    0.0 the vector only (the arms reading the vector, when Open WebUI sent one); between the two, every arm."""
    k = max(1, int(limit))
    on = [arm for arm in BUILTIN
          if (arm.reads != VECTOR or (has_vector and hybrid_bm25_weight < 1))
          and (arm.reads != TERMS or hybrid_bm25_weight > 0)]
    if not on:
        on = [arm for arm in BUILTIN if arm.reads == TERMS]  # weight 0 but no vector: the terms are all there is
    base = SearchConfig().with_(k=k, rerank=False, statement_timeout_ms=STATEMENT_TIMEOUT_MS, ef_search=EF_SEARCH)
    return only(base, on, depth_at_least=k)


def ranks_metadata(result: SearchResult, index: int) -> dict[str, Any]:
    hit = result.hits[index]
    extra: dict[str, Any] = {
        keys.CHUNK_ID: hit.id,
        keys.RANK: index + 1,
        keys.RRF_SCORE: hit.rrf_score,
        keys.TOP_RRF_SCORE: result.hits[0].rrf_score,
        keys.RELEVANCE: hit.relevance,
        # Every arm's rank and own score (None where it did not return the hit), as in `ragfr search --json`.
        **{keys.arm_rank(arm): hit.ranks.get(arm) for arm in hit.arm_names()},
        **{keys.arm_score(arm): hit.scores.get(arm) for arm in hit.arm_names()},
        keys.EMBEDDING_MODEL: result.settings.get("embedding_model"),
        keys.UNDERFILLED: result.underfilled,
        # What the vector arm's answer depended on (ArmReport.scope): "collections" when the knowledge base
        # was scored exactly, so no other upload can change it; the chat's gate log repeats it.
        keys.VECTOR_SCOPE: next((a.scope for a in result.arms.values() if a.scope), None),
        keys.EVIDENCE: json.dumps(result.evidence, separators=(",", ":")),
        keys.ABSENT_SUBJECT: json.dumps(subject.to_json(result.absence), ensure_ascii=False, separators=(",", ":")),
    }
    if result.underfilled:
        extra[keys.UNDERFILL_REASON] = result.underfill_reason
    return extra


def hit_metadata(result: SearchResult, index: int, token: str) -> dict[str, Any]:
    """A hit's stored metadata without any `ragfr_` key (a document may not speak for the gate: a chunk
    stored before the upload path dropped them still holds them), then the search's own keys and the
    result's provenance token (the gate reads the keys of passages this process made only)."""
    return {**without_reserved(result.hits[index].metadata), **ranks_metadata(result, index),
            keys.PROVENANCE: token}


def to_owui(results: list[SearchResult], result_type: Any) -> Any:
    """One Open WebUI SearchResult row per query vector (or one row for a keyword-only query)."""
    tokens = [provenance.issue() for _ in results]
    return result_type(
        ids=[[h.id for h in r.hits] for r in results],
        documents=[[h.text for h in r.hits] for r in results],
        metadatas=[[hit_metadata(r, i, t) for i in range(len(r.hits))] for r, t in zip(results, tokens, strict=True)],
        # The relevance the analyst reads (ragfr.gate.relevance), not the RRF score (<= 0.033, « 3.28 % »):
        # Open WebUI shows it as a percentage and re-sorts merged collections by it, which keeps ragfr's order.
        distances=[[h.relevance for h in r.hits] for r in results],
    )


def _search_all(
    conn: psycopg.Connection[Any],
    second: psycopg.Connection[Any],
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
            query_vector=vector if reads(config, VECTOR) else None,
            config=config,
            lexical_conn=second,
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
    """Open WebUI's SearchResult, None only where ragfr declines the database (PGVECTOR_PGCRYPTO), and
    `SearchUnavailable` for every failure: the chat step (`ragfr.owui.runtime.chat_search`) turns it into an
    honest message, where a None would send the question to Open WebUI's legacy path."""
    if encrypted:
        log.warning(
            "ragfr: PGVECTOR_PGCRYPTO encrypts document_chunk.text, which ragfr's French index cannot read; "
            "using Open WebUI's legacy hybrid search (French tokenizer) for %s", collection_name,
        )
        return None
    weight = min(max(float(hybrid_bm25_weight), 0.0), 1.0)
    dsn = ""
    try:
        dsn = session_dsn(session)
        args: dict[str, Any] = dict(
            collection_name=collection_name, query=query, vectors=vectors or [], filter=filter,
            limit=limit, hybrid_bm25_weight=weight,
        )
        with pool(dsn, "main").connection() as conn, pool(dsn, "aside").connection() as second:
            results = _search_all(conn, second, **args)
    except PoolTimeout as err:
        metrics.search_failed(timeout=True)  # never reached hybrid.search, which counts its own failures
        # The pool waits the same for a connection every search holds as for one the server refuses: the
        # analyst is told busy only when the database answers.
        down = no_answer(dsn)
        if down:
            raise SearchUnavailable("unavailable", f"the database does not answer: {down} ({redact(dsn)})") from err
        raise SearchUnavailable("busy", f"no database connection free within {POOL_WAIT_S:g} s: {err}") from err
    except SearchTimeoutError as err:
        raise SearchUnavailable("busy", str(err)) from err
    except ConfigError as err:  # the question (too long, NUL, empty) or Open WebUI's filter
        raise SearchUnavailable("refused", str(err)) from err
    except psycopg.OperationalError as err:  # the connection refused or lost outside hybrid.search
        raise SearchUnavailable("unavailable", f"{first_line(err)} ({redact(dsn)})") from err
    except RagfrError as err:
        if isinstance(err.__cause__, psycopg.OperationalError):  # lost during the search (server gone, restarted)
            raise SearchUnavailable("unavailable", f"{err} ({redact(dsn)})") from err
        raise SearchUnavailable("failed", f"{err} ({redact(dsn)})") from err
    except Exception as err:
        log.exception("ragfr: hybrid search failed for %s (%s)", collection_name, redact(dsn))
        raise SearchUnavailable("failed", f"{type(err).__name__}: {first_line(err)}") from err
    return to_owui(results, result_type)

