"""Stock Open WebUI 0.12.4 retrieval, reproduced for timing on the same rows (NOT ragfr rules).

Credit: the SQL and the fusion below are Open WebUI's (open-webui 0.12.4, BSD-3-Clause license with
branding clause), read from the installed package and rewritten here so the benchmark times exactly
those statements on the same connection type as ragfr:
- native hybrid: `open_webui/retrieval/vector/dbs/pgvector.py`, `PgvectorClient.hybrid_search`:
  the vector arm is `PgvectorClient.search` (a LATERAL top-`limit` cosine query per query vector, after
  `SET LOCAL hnsw.iterative_scan = relaxed_order`, its PGVECTOR_ITERATIVE_SCAN default; hnsw.ef_search is
  never set, so pgvector's default 40 applies), the keyword arm is `plainto_tsquery('simple', q)` over
  `to_tsvector('simple', coalesce(text, ''))` ranked by `ts_rank_cd` (ALL query words must occur), each
  in its own transaction ended by a rollback as the client does; fused by
  `open_webui/retrieval/vector/utils.py` `merge_hybrid_search_results` (weighted RRF, constant 60,
  RAG_HYBRID_BM25_WEIGHT default 0.5). Open WebUI builds the vector with SQLAlchemy
  (`CAST(ARRAY[...] AS VECTOR(N))`); here it is one float8[] parameter cast the same way.
- legacy in-memory path: `open_webui/retrieval/utils.py` `query_doc_with_hybrid_search`: the whole
  collection is read (`PgvectorClient.get`, every column of the row, vector included), then
  `rank_bm25.BM25Okapi([text.split() ...])` is built and queried with `query.split()` (`BM25Retriever`),
  next to the same vector search. The vector column is fetched but left as text (Open WebUI's pgvector
  SQLAlchemy type also parses it into numpy), so this path's cost is, if anything, UNDERestimated.
Open WebUI's native path refuses metadata filters (returns None and falls back to the legacy path), so
there is no filtered Open WebUI figure to compare with.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from rank_bm25 import BM25Okapi

from ragfr.timing import elapsed_ms

RANK_CONSTANT = 60.0
BM25_WEIGHT = 0.5
OWUI_EF_SEARCH = 40  # pgvector's default; Open WebUI never sets hnsw.ef_search

ITERATIVE_SCAN = "SET LOCAL hnsw.iterative_scan = relaxed_order"
VECTOR_SQL = """
SELECT query_vectors.qid, result.id, result.text, result.vmetadata, result.distance
  FROM (VALUES (0, CAST(%s::float8[] AS VECTOR({dims})))) AS query_vectors (qid, q_vector)
  JOIN LATERAL (
        SELECT document_chunk.id, document_chunk.text, document_chunk.vmetadata,
               document_chunk.vector <=> query_vectors.q_vector AS distance
          FROM document_chunk
         WHERE document_chunk.collection_name = %s
         ORDER BY document_chunk.vector <=> query_vectors.q_vector
         LIMIT %s) AS result ON true
 ORDER BY query_vectors.qid, result.distance
"""
KEYWORD_SQL = """
WITH fts_query AS (
    SELECT plainto_tsquery('simple', %(query)s) AS query
)
SELECT
    document_chunk.id AS id,
    document_chunk.text AS text,
    document_chunk.vmetadata AS vmetadata,
    ts_rank_cd(
        to_tsvector('simple', coalesce(document_chunk.text, '')),
        fts_query.query
    ) AS rank
FROM document_chunk, fts_query
WHERE document_chunk.collection_name = %(collection_name)s
  AND to_tsvector('simple', coalesce(document_chunk.text, '')) @@ fts_query.query
ORDER BY rank DESC
LIMIT %(limit)s
"""
_GET_COLLECTION = (
    "SELECT id, vector, collection_name, text, vmetadata FROM document_chunk WHERE collection_name = %s"
)


@dataclass
class NativeResult:
    ids: list[str]
    vector_ids: list[str]
    keyword_ids: list[str]
    ms: dict[str, float] = field(default_factory=dict)


def vector_search(conn: psycopg.Connection[Any], collection: str, vector: np.ndarray, limit: int) -> list[str]:
    """`PgvectorClient.search` for one query vector (the caller's connection must not be autocommit)."""
    conn.execute(ITERATIVE_SCAN)
    query = sql.SQL(VECTOR_SQL).format(dims=sql.Literal(int(vector.shape[0])))
    rows = conn.execute(query, ([float(x) for x in vector], collection, limit)).fetchall()
    conn.rollback()  # "read-only transaction", as the client does
    return [str(r[1]) for r in rows]


def keyword_search(conn: psycopg.Connection[Any], collection: str, query: str, limit: int) -> list[str]:
    rows = conn.execute(KEYWORD_SQL, {"query": query, "collection_name": collection, "limit": limit}).fetchall()
    conn.rollback()
    return [str(r[0]) for r in rows]


def merge(vector_ids: list[str], keyword_ids: list[str], limit: int, bm25_weight: float = BM25_WEIGHT) -> list[str]:
    """merge_hybrid_search_results for one query: weighted RRF, stable sort (ties keep insertion order)."""
    scores: dict[str, float] = {}
    for rank, item in enumerate(vector_ids, start=1):
        scores[item] = scores.get(item, 0.0) + (1.0 - bm25_weight) / (RANK_CONSTANT + rank)
    for rank, item in enumerate(keyword_ids, start=1):
        scores[item] = scores.get(item, 0.0) + bm25_weight / (RANK_CONSTANT + rank)
    return [item for item, _ in sorted(scores.items(), key=lambda kv: kv[1], reverse=True)[:limit]]


def native_hybrid(
    conn: psycopg.Connection[Any], collection: str, query: str, vector: np.ndarray, limit: int
) -> NativeResult:
    t0 = time.perf_counter()
    vector_ids = vector_search(conn, collection, vector, limit)
    t1 = time.perf_counter()
    keyword_ids = keyword_search(conn, collection, query, limit) if query.strip() else []
    t2 = time.perf_counter()
    ids = merge(vector_ids, keyword_ids, limit)
    t3 = time.perf_counter()
    return NativeResult(ids, vector_ids, keyword_ids, {
        "vector": elapsed_ms(t0, t1), "keyword": elapsed_ms(t1, t2), "merge": elapsed_ms(t2, t3),
        "total": elapsed_ms(t0, t3),
    })


@dataclass
class LegacyResult:
    bm25_ids: list[str]
    vector_ids: list[str]
    ms: dict[str, float]


def legacy_hybrid(
    conn: psycopg.Connection[Any], collection: str, query: str, vector: np.ndarray, k: int
) -> LegacyResult:
    """One question on the legacy path: read the collection, build BM25Okapi, query it, search vectors."""
    t0 = time.perf_counter()
    rows = conn.execute(_GET_COLLECTION, (collection,)).fetchall()
    conn.rollback()
    t1 = time.perf_counter()
    texts = [str(r[3] or "") for r in rows]
    bm25 = BM25Okapi([text.split() for text in texts])
    t2 = time.perf_counter()
    bm25_ids = [str(i) for i in bm25.get_top_n(query.split(), [r[0] for r in rows], n=k)]
    t3 = time.perf_counter()
    vector_ids = vector_search(conn, collection, vector, k)
    t4 = time.perf_counter()
    return LegacyResult(bm25_ids, vector_ids, {
        "read_collection": elapsed_ms(t0, t1), "bm25_build": elapsed_ms(t1, t2), "bm25_query": elapsed_ms(t2, t3),
        "vector": elapsed_ms(t3, t4), "total": elapsed_ms(t0, t4),
    })
