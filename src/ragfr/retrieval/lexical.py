"""The lexical arm: French BM25 matching ANY significant query term.

Stock Open WebUI asks `plainto_tsquery('simple', q)`: every word of a natural question must occur, so
questions match nothing. Here a chunk is a candidate when it holds at least one query lexeme (OR), and
candidates are ranked by Okapi BM25 with the per-collection statistics of migrations/0005, all kept exact
by triggers. Without metadata conditions the postings come from the compact block index of
migrations/0010 and ragfr.retrieval.blockmax stops early: it reads the blocks that can still reach the
top `depth` and walks the best candidates through the hard-filter predicate (one primary-key probe each)
until `depth` pass. With metadata conditions that few rows pass, the filter runs first instead and the
survivors are scored from their tsvectors (_BM25_FILTER_FIRST, same scores); the planner's estimate of the
passing rows decides, by the cost rule of ragfr.retrieval.strategy. The arm is exact either way: it returns
fewer than `depth` rows only when fewer match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql

from ragfr.filters.predicate import Filters
from ragfr.retrieval import blockmax, estimate, strategy
from ragfr.retrieval.config import SearchConfig
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

# Every block's bounds for the query's lexemes, read from the primary key (index-only), one row per
# (lexeme, collection), packed in one bytea of _BOUNDS records for numpy (an int array is output element by
# element, migrations/0013) (parameters: collections, lexemes, collections, collections).
_BLOCKS = _STATS_AND_IDF + """)
SELECT i.lexeme, i.idf, s.avgdl, b.collection_name,
       string_agg(int4send(b.blk) || int4send(b.lo) || int4send(b.hi) || int2send(b.n) || int2send(b.max_tf)
                  || int4send(b.min_len), ''::bytea ORDER BY b.blk)
  FROM idf i
  CROSS JOIN stats s
  JOIN ragfr_lex_blocks b ON b.lexeme = i.lexeme AND b.collection_name = ANY(%s)
 GROUP BY i.lexeme, i.idf, s.avgdl, b.collection_name
"""
_BOUNDS = np.dtype([("blk", ">i4"), ("lo", ">i4"), ("hi", ">i4"), ("n", ">i2"), ("max_tf", ">i2"),
                    ("min_len", ">i4")])

# The postings of chosen blocks, one row per block, packed (migrations/0013: big-endian int4 docnos, int2
# tfs, int4 lens). The query's keys are sent once (parameters: collections, lexemes), then the keys read
# whole, by one range scan each (key indexes), and the other blocks, by primary-key probes (key indexes,
# blks). Rows, not an aggregate: concatenating in SQL cost more than it saved.
_POSTINGS = """
WITH key AS (SELECT * FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS k(c, l, i))
SELECT key.i, b.docnos, b.tfs, b.lens
  FROM key JOIN ragfr_lex_blocks b ON b.collection_name = key.c AND b.lexeme = key.l
 WHERE key.i = ANY(%s::bigint[])
UNION ALL
SELECT key.i, b.docnos, b.tfs, b.lens
  FROM unnest(%s::bigint[], %s::integer[]) AS p(i, blk)
  JOIN key ON key.i = p.i
  JOIN ragfr_lex_blocks b ON b.collection_name = key.c AND b.lexeme = key.l AND b.blk = p.blk
"""

# Candidates in rank order (score, then chunk id, as the arm ranks), each with whether it passes the
# hard-filter predicate. Every candidate is probed, so the failures are known and never probed again.
_WALK = """
SELECT c.docno, m.chunk_id, c.score,
       coalesce((SELECT true FROM document_chunk d WHERE d.id = m.chunk_id AND {predicate}), false)
  FROM unnest(%s::integer[], %s::float8[]) AS c(docno, score)
  JOIN ragfr_lex_docs m ON m.docno = c.docno
 ORDER BY c.score DESC, m.chunk_id
"""


# The same BM25, filter first: when metadata conditions restrict the rows, the GIN candidates are filtered
# inside the scan and only the survivors' tsvectors are read (at 1 % selectivity this beats walking the
# postings of every match through the filter). Scores equal the block index's (ragfr.retrieval.blockmax):
# the same operations, and the sum pinned to lexeme order, as blockmax adds them.
_BM25_FILTER_FIRST = _STATS_AND_IDF + """), candidates AS (
    SELECT d.id, d.fts, d.fts_len
      FROM document_chunk d
     WHERE d.fts @@ replace(array_to_tsvector(%s::text[])::text, ''' ''', ''' | ''')::tsquery
       AND {predicate}
)
SELECT c.id,
       sum(i.idf * (cardinality(u.positions) * (%s + 1))
           / (cardinality(u.positions) + %s * (1 - %s + %s * c.fts_len / s.avgdl))
           ORDER BY u.lexeme COLLATE "C") AS score
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
    conn: psycopg.Connection[Any], terms: list[str], filters: Filters, config: SearchConfig,
    searched: int | None = None,
) -> tuple[list[LexicalCandidate], ArmReport]:
    """The arm's top `lexical_depth`. `searched`: rows in the searched collections (the cost rule's N),
    read from the collection statistics when not given.
    Strategies in the report: "bm25" (block index, walked through the filters when there are conditions),
    "bm25-filter-first", "ts_rank_cd"."""
    report = ArmReport("lexical", config.lexical_depth, strategy=config.lexical_ranking)
    if not terms:
        report.reason = "no significant query term (only stop words or punctuation)"
        return [], report
    if config.lexical_ranking == "ts_rank_cd":
        predicate, pparams = filters.predicate("d")
        query = sql.SQL(_TS_RANK_CD).format(predicate=predicate)
        rows = conn.execute(query, [terms, *pparams, config.lexical_depth]).fetchall()
    elif filters.conditions and _filter_first(conn, filters, config, searched, report):
        report.strategy = "bm25-filter-first"
        rows = bm25_filter_first(conn, terms, filters, config)
    else:
        rows = bm25_blocks(conn, terms, filters, config)
    report.returned = len(rows)
    return [LexicalCandidate(r[0], float(r[1])) for r in rows], report


def _filter_first(
    conn: psycopg.Connection[Any], filters: Filters, config: SearchConfig, searched: int | None,
    report: ArmReport,
) -> bool:
    """Whether few enough rows pass `filters` to score them first (ragfr.retrieval.strategy). Without an
    estimate (range conditions) the filter runs first: its cost is bounded by the passing rows, while a walk
    through a filter that passes almost nothing would probe every matching chunk."""
    if searched is None:
        row = conn.execute(
            "SELECT coalesce(sum(n_docs), 0) FROM ragfr_collection_stats WHERE collection_name = ANY(%s)",
            (list(filters.collections),),
        ).fetchone()
        searched = int(row[0]) if row else 0
    report.threshold = strategy.lexical_filter_first_threshold(
        searched, config.lexical_depth, config.lexical_probe_cost_ratio)
    report.estimated = estimate.passing_rows(conn, filters)
    return report.estimated is None or report.estimated <= report.threshold


def bm25_filter_first(
    conn: psycopg.Connection[Any], terms: list[str], filters: Filters, config: SearchConfig
) -> list[tuple[str, float]]:
    """BM25 from the tsvectors of every chunk that matches and passes the filters: the plain definition,
    without the block index (also the reference the block search is tested against)."""
    predicate, pparams = filters.predicate("d")
    colls = list(filters.collections)
    k1, b = config.bm25_k1, config.bm25_b
    query = sql.SQL(_BM25_FILTER_FIRST).format(predicate=predicate)
    params = [colls, terms, colls, terms, *pparams, k1, k1, b, b, config.lexical_depth]
    return [(r[0], float(r[1])) for r in conn.execute(query, params).fetchall()]


# migrations/0013's packing of docnos, tfs and lens
_PACKED = (np.dtype(">i4"), np.dtype(">i2"), np.dtype(">i4"))


def bm25_blocks(
    conn: psycopg.Connection[Any], terms: list[str], filters: Filters, config: SearchConfig,
    stats: dict[str, int] | None = None,
) -> list[tuple[str, float]]:
    """The unfiltered BM25 arm from the block index (ragfr.retrieval.blockmax); `stats` receives how many
    blocks and postings the query's lexemes hold and how many were read."""
    colls = list(filters.collections)
    k1, b, depth = config.bm25_k1, config.bm25_b, config.lexical_depth
    # binary: bytea arrives as is, not hex-encoded
    rows = conn.execute(_BLOCKS, [colls, terms, colls, colls], binary=True).fetchall()
    if not rows:
        return []
    avgdl = float(rows[0][2])
    lexemes = sorted({r[0] for r in rows})  # term order = summation order (blockmax._Search.seen)
    term_index = {lexeme: i for i, lexeme in enumerate(lexemes)}
    idf = np.zeros(len(lexemes))
    key_term: list[int] = []
    key_coll: list[str] = []
    key_lex: list[str] = []
    packed: list[bytes] = []
    keys: list[npt.NDArray[np.int64]] = []
    for i, (lexeme, term_idf, _, coll, key_bounds) in enumerate(rows):
        idf[term_index[lexeme]] = float(term_idf)
        key_term.append(term_index[lexeme])
        key_coll.append(coll)
        key_lex.append(lexeme)
        packed.append(key_bounds)
        keys.append(np.full(len(key_bounds) // _BOUNDS.itemsize, i, dtype=np.int64))
    bounds = np.frombuffer(b"".join(packed), dtype=_BOUNDS)
    meta = blockmax.BlockMeta(np.concatenate(keys), *(bounds[f].astype(np.int64) for f in _BOUNDS.names or ()))
    term_of_key = np.array(key_term, dtype=np.int64)

    key_blocks = np.bincount(meta.key, minlength=len(key_term))

    def fetch(mask: npt.NDArray[np.bool_]) -> list[blockmax.Postings]:
        chosen = np.flatnonzero(mask)
        key = meta.key[chosen]
        whole = np.flatnonzero(np.bincount(key, minlength=len(key_term)) == key_blocks)
        some = ~np.isin(key, whole)
        probe = chosen[some]
        found = conn.execute(_POSTINGS, [key_coll, key_lex, (whole + 1).tolist(), (key[some] + 1).tolist(),
                                         meta.blk[probe].tolist()], binary=True).fetchall()
        per_key: dict[int, list[tuple[bytes, bytes, bytes]]] = {}
        for k, docnos, tfs, lens in found:  # blocks of a key joined; keys numbered from 1 in SQL
            per_key.setdefault(k - 1, []).append((docnos, tfs, lens))
        out = []
        for k, blocks in per_key.items():
            docno, tf, length = (np.frombuffer(b"".join(x[j] for x in blocks), dtype=_PACKED[j]) for j in range(3))
            contrib = blockmax.term_score(idf[term_of_key[k]], tf, length, k1, b, avgdl)
            out.append(blockmax.Postings(int(term_of_key[k]), docno.astype(np.int64), contrib))
        return out

    predicate, pparams = filters.predicate("d")
    walk_sql = sql.SQL(_WALK).format(predicate=predicate)
    # Chunks known to fail the filters. blockmax walks the best candidates twice when the filters reject
    # many (once for theta, once for the result): the second walk skips them (half the probes at 10 %).
    failed: set[int] = set()

    def walk(docnos: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]) -> list[tuple[str, float]]:
        if failed:
            keep = ~np.isin(docnos, np.fromiter(failed, dtype=np.int64, count=len(failed)))
            docnos, scores = docnos[keep], scores[keep]
        order = np.argsort(-scores, kind="stable")
        ranked = scores[order]
        passed: list[tuple[str, float]] = []
        start, batch = 0, depth
        while start < len(order) and len(passed) < depth:
            end = min(start + batch, len(order))
            # never cut between equal scores: their order is the chunk id's, decided in SQL
            end = int(np.searchsorted(-ranked, -ranked[end - 1], side="right"))
            got = conn.execute(walk_sql, [*pparams, docnos[order[start:end]].tolist(), ranked[start:end].tolist()],
                               binary=True).fetchall()
            for docno, chunk_id, score, passes in got:
                if not passes:
                    failed.add(docno)
                elif len(passed) < depth:
                    passed.append((chunk_id, float(score)))
            start, batch = end, batch * 2
        return passed

    # With metadata conditions many of the best chunks may fail them: theta comes from passing ones at once.
    return blockmax.top(meta, idf, term_of_key, k1, b, avgdl, depth, fetch, walk, stats,
                        verified=bool(filters.conditions))
