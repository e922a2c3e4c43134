"""Two lexical baselines that mimic stock Open WebUI 0.12.4, NOT ragfr rules (those live in
ragfr.retrieval): they exist so the evaluation can show what ragfr changes.

- bm25-whitespace: its legacy hybrid path's keyword arm (retrieval/utils.py): rank_bm25.BM25Okapi over
  `text.split()` of every chunk of the collection, queried with `query.split()` -- no lowercasing, no
  stemming, no accent folding.
- pg-simple-and: its native hybrid path's keyword arm (retrieval/vector/dbs/pgvector.py, hybrid_search):
  `plainto_tsquery('simple', q)` (every query word must match) over `to_tsvector('simple', text)`, ranked
  by ts_rank_cd.
Differences from Open WebUI, so both can rank a filtered query: the metadata filter restricts the
candidates (Open WebUI's native path refuses filters). Chunks with a zero BM25 score are not ranked:
their order would be arbitrary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb
from rank_bm25 import BM25Okapi

from ragfr.errors import DatabaseError
from ragfr.eval.beir import Query
from ragfr.eval.configs import ConfigSpec, EvalContext, Ranker


def _matches(metadata: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    return all(metadata.get(key) == value for key, value in filters.items())


class WhitespaceBM25:
    name = "bm25-whitespace"

    def __init__(self, ctx: EvalContext) -> None:
        self.depth = ctx.depth
        try:
            with ctx.conn.cursor() as cur:
                cur.execute(
                    "SELECT id, text, vmetadata FROM document_chunk WHERE collection_name = %s ORDER BY id",
                    (ctx.collection,),
                )
                rows = cur.fetchall()
        except psycopg.Error as exc:
            raise DatabaseError(f"cannot load collection {ctx.collection!r}: {exc}") from exc
        self.ids = [str(r[0]) for r in rows]
        self.metadata = [dict(r[2] or {}) for r in rows]
        self.bm25 = BM25Okapi([str(r[1] or "").split() for r in rows])

    def rank(self, query: Query, query_vector: Sequence[float]) -> list[str]:
        scores = np.asarray(self.bm25.get_scores(query.text.split()))
        order = np.argsort(-scores, kind="stable")
        out: list[str] = []
        for i in order:
            if scores[i] <= 0 or len(out) >= self.depth:
                break
            if _matches(self.metadata[i], query.filters):
                out.append(self.ids[i])
        return out

    def close(self) -> None:
        pass


_SIMPLE_AND_SQL = """
    WITH fts_query AS (SELECT plainto_tsquery('simple', %(query)s) AS query)
    SELECT document_chunk.id
      FROM document_chunk, fts_query
     WHERE document_chunk.collection_name = %(collection)s
       AND document_chunk.vmetadata @> %(filters)s
       AND to_tsvector('simple', coalesce(document_chunk.text, '')) @@ fts_query.query
     ORDER BY ts_rank_cd(to_tsvector('simple', coalesce(document_chunk.text, '')), fts_query.query) DESC,
              document_chunk.id
     LIMIT %(limit)s
"""


class SimpleAnd:
    name = "pg-simple-and"

    def __init__(self, ctx: EvalContext) -> None:
        self.ctx = ctx

    def rank(self, query: Query, query_vector: Sequence[float]) -> list[str]:
        params = {"query": query.text, "collection": self.ctx.collection, "filters": Jsonb(dict(query.filters)),
                  "limit": self.ctx.depth}
        try:
            with self.ctx.conn.cursor() as cur:
                cur.execute(_SIMPLE_AND_SQL, params)
                rows = cur.fetchall()
            self.ctx.conn.rollback()
        except psycopg.Error as exc:
            self.ctx.conn.rollback()
            raise DatabaseError(f"pg-simple-and query failed: {exc}") from exc
        return [str(r[0]) for r in rows]

    def close(self) -> None:
        pass


def _bm25(ctx: EvalContext) -> Ranker | str:
    return WhitespaceBM25(ctx)


def _simple(ctx: EvalContext) -> Ranker | str:
    return SimpleAnd(ctx)


SPECS = [
    ConfigSpec("bm25-whitespace", "Open WebUI legacy keyword arm: rank_bm25 on text.split()", _bm25),
    ConfigSpec("pg-simple-and", "Open WebUI native keyword arm: 'simple' plainto_tsquery AND + ts_rank_cd", _simple),
]
