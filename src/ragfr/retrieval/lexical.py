"""The lexical arm: French BM25 over the stored tsvector, matching ANY significant query term.

Stock Open WebUI asks `plainto_tsquery('simple', q)`: every word of a natural question must occur, so
questions match nothing. Here a chunk is a candidate when it contains at least one query lexeme (OR, via
the GIN index), and candidates are ranked by Okapi BM25 computed from the chunk's term frequencies
(tsvector positions), its token count (fts_len) and the per-collection statistics the triggers of
migrations/0005 keep exact. The arm is exact: it returns fewer than `depth` rows only when fewer match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.filters import Filters
from ragfr.retrieval.types import ArmReport

_BM25 = """
WITH stats AS (
    SELECT coalesce(sum(n_docs), 0)::float8 AS n,
           coalesce(sum(total_len)::float8 / nullif(sum(n_docs), 0), 1) AS avgdl
      FROM ragfr_collection_stats WHERE collection_name = ANY(%s)
), idf AS (
    SELECT q.lexeme, ln(1 + (s.n - coalesce(sum(t.df), 0) + 0.5) / (coalesce(sum(t.df), 0) + 0.5)) AS idf
      FROM unnest(%s::text[]) AS q(lexeme)
      CROSS JOIN stats s
      LEFT JOIN ragfr_term_stats t ON t.lexeme = q.lexeme AND t.collection_name = ANY(%s)
     GROUP BY q.lexeme, s.n
), candidates AS (
    SELECT d.id, d.fts, d.fts_len
      FROM document_chunk d
     WHERE d.fts @@ replace(array_to_tsvector(%s::text[])::text, ''' ''', ''' | ''')::tsquery
       AND {predicate}
)
SELECT c.id,
       sum(i.idf * (cardinality(u.positions) * (%s + 1))
           / (cardinality(u.positions) + %s * (1 - %s + %s * c.fts_len / s.avgdl))) AS score
  FROM candidates c
  CROSS JOIN stats s
  CROSS JOIN LATERAL unnest(c.fts) AS u
  JOIN idf i ON i.lexeme = u.lexeme
 GROUP BY c.id
 ORDER BY score DESC, c.id
 LIMIT %s
"""


# The alternative ADR 0003 measured BM25 against: PostgreSQL's cover-density rank on the same candidates.
_TS_RANK_CD = """
SELECT d.id, ts_rank_cd(d.fts, q.tsq) AS score
  FROM document_chunk d,
       (SELECT replace(array_to_tsvector(%s::text[])::text, ''' ''', ''' | ''')::tsquery AS tsq) q
 WHERE d.fts @@ q.tsq AND {predicate}
 ORDER BY score DESC, d.id
 LIMIT %s
"""


@dataclass(frozen=True)
class LexicalCandidate:
    id: str
    score: float


def bm25(
    conn: psycopg.Connection[Any], terms: list[str], filters: Filters, config: SearchConfig
) -> tuple[list[LexicalCandidate], ArmReport]:
    report = ArmReport("lexical", config.lexical_depth, strategy=config.lexical_ranking)
    if not terms:
        report.reason = "no significant query term (only stop words or punctuation)"
        return [], report
    predicate, pparams = filters.predicate("d")
    colls = list(filters.collections)
    if config.lexical_ranking == "ts_rank_cd":
        query = sql.SQL(_TS_RANK_CD).format(predicate=predicate)
        params: list[object] = [terms, *pparams, config.lexical_depth]
    else:
        k1, b = config.bm25_k1, config.bm25_b
        query = sql.SQL(_BM25).format(predicate=predicate)
        params = [colls, terms, colls, terms, *pparams, k1, k1, b, b, config.lexical_depth]
    rows = conn.execute(query, params).fetchall()
    report.returned = len(rows)
    return [LexicalCandidate(r[0], float(r[1])) for r in rows], report
