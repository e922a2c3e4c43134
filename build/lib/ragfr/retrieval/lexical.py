"""The lexical arm: French BM25 matching ANY significant query term.

Stock Open WebUI asks `plainto_tsquery('simple', q)`: every word of a natural question must occur, so
questions match nothing. Here a chunk is a candidate when it holds at least one query lexeme (OR), and
candidates are ranked by Okapi BM25 from the postings of the query's lexemes (term frequency and chunk
length per (collection, lexeme, chunk), migrations/0006) and the per-collection statistics of
migrations/0005, all kept exact by triggers. Candidates are scored first, then walked in score order
through the hard-filter predicate (one primary-key probe each) until `depth` pass, so an unfiltered query
touches `depth` chunks, not every match. With metadata conditions the filter runs first instead
(_BM25_FILTER_FIRST, same scores). The arm is exact: it returns fewer than `depth` rows only when fewer
match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.filters import Filters
from ragfr.retrieval.types import ArmReport

# Collection statistics and idf of each query lexeme, shared by both BM25 statements
# (parameters: collections, lexemes, collections).
_STATS_AND_IDF = """
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
"""

_BM25 = _STATS_AND_IDF + """), scored AS MATERIALIZED (
    SELECT p.chunk_id,
           sum(i.idf * (p.tf * (%s + 1)) / (p.tf + %s * (1 - %s + %s * p.fts_len / s.avgdl))) AS score
      FROM idf i
      JOIN ragfr_postings p ON p.lexeme = i.lexeme AND p.collection_name = ANY(%s)
      CROSS JOIN stats s
     GROUP BY p.chunk_id
     ORDER BY score DESC, p.chunk_id
)
SELECT sc.chunk_id, sc.score
  FROM scored sc
 -- A scalar subquery stays a per-row probe (never turned into a join over the whole table), so the walk
 -- stops as soon as LIMIT rows have passed the filters.
 WHERE coalesce((SELECT true FROM document_chunk d WHERE d.id = sc.chunk_id AND {predicate}), false)
 LIMIT %s
"""  # noqa: S608 - composed of constants; values are bound parameters


# The same BM25, filter first: when metadata conditions restrict the rows, the GIN candidates are filtered
# inside the scan and only the survivors' tsvectors are read (at 1 % selectivity this beats walking the
# postings of every match through the filter). Scores equal _BM25's (tests/retrieval/test_search.py).
_BM25_FILTER_FIRST = _STATS_AND_IDF + """), candidates AS (
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
"""  # noqa: S608 - composed of constants; values are bound parameters


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
        if filters.conditions:
            report.strategy = "bm25-filter-first"
            query = sql.SQL(_BM25_FILTER_FIRST).format(predicate=predicate)
            params = [colls, terms, colls, terms, *pparams, k1, k1, b, b, config.lexical_depth]
        else:
            query = sql.SQL(_BM25).format(predicate=predicate)
            params = [colls, terms, colls, k1, k1, b, b, colls, *pparams, config.lexical_depth]
    rows = conn.execute(query, params).fetchall()
    report.returned = len(rows)
    return [LexicalCandidate(r[0], float(r[1])) for r in rows], report
