"""The BM25 scan of the lexical index: the SQL that reads it and the two exact ways of taking a query's top
`depth` (migrations/0005, 0010, 0013).

  blocks        the compact block index (ragfr_lex_blocks): ragfr.lexical_index.blockmax reads the blocks that
                can still reach the top `depth` and walks the best candidates through the hard-filter predicate
                (one primary-key probe each) until `depth` pass;
  filter first  the filter runs first and the survivors are scored from their tsvectors (_BM25_FILTER_FIRST,
                the same scores): the plain definition, also the reference the block scan is tested against;
  ts_rank_cd    PostgreSQL's cover-density rank on the same candidates (ADR 0003's comparison).

Which one a query takes is the lexical arm's choice (ragfr.retrieval.lexical), by the cost rule of
ragfr.retrieval.strategy. Each returns (chunk id, score) pairs best first, ties by chunk id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql

from ragfr.filters.predicate import Filters
from ragfr.lexical_index import blockmax


class Settings(Protocol):
    """What a scan reads of the search's settings (ragfr.retrieval.config.SearchConfig has them)."""

    @property
    def bm25_k1(self) -> float: ...
    @property
    def bm25_b(self) -> float: ...
    @property
    def lexical_depth(self) -> int: ...


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
# postings of every match through the filter). Scores equal the block index's (ragfr.lexical_index.blockmax):
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


def ts_rank_cd(conn: psycopg.Connection[Any], terms: list[str], filters: Filters, config: Settings) -> list[Any]:
    """The alternative ranking (_TS_RANK_CD): (id, score) rows best first."""
    predicate, pparams = filters.predicate("d")
    query = sql.SQL(_TS_RANK_CD).format(predicate=predicate)
    return conn.execute(query, [terms, *pparams, config.lexical_depth]).fetchall()


def bm25_filter_first(
    conn: psycopg.Connection[Any], terms: list[str], filters: Filters, config: Settings
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
    conn: psycopg.Connection[Any], terms: list[str], filters: Filters, config: Settings,
    stats: dict[str, int] | None = None,
) -> list[tuple[str, float]]:
    """The BM25 top from the block index (ragfr.lexical_index.blockmax); `stats` receives how many blocks
    and postings the query's lexemes hold and how many were read."""
    colls = list(filters.collections)
    # binary: bytea arrives as is, not hex-encoded
    rows = conn.execute(_BLOCKS, [colls, terms, colls, colls], binary=True).fetchall()
    if not rows:
        return []
    keys = _Keys.of(rows)
    k1, b, depth = config.bm25_k1, config.bm25_b, config.lexical_depth
    # With metadata conditions many of the best chunks may fail them: theta comes from passing ones at once.
    return blockmax.top(keys.meta, keys.idf, keys.term_of_key, k1, b, keys.avgdl, depth,
                        _fetcher(conn, keys, k1, b), _walker(conn, filters, depth), stats,
                        verified=bool(filters.conditions))


@dataclass
class _Keys:
    """The query's (collection, lexeme) keys with every block's bounds, as _BLOCKS returns them."""

    avgdl: float
    idf: npt.NDArray[np.float64]  # per term (lexemes sorted: the summation order, blockmax._Search.seen)
    term_of_key: npt.NDArray[np.int64]
    collection: list[str]  # per key
    lexeme: list[str]  # per key
    meta: blockmax.BlockMeta

    @classmethod
    def of(cls, rows: list[Any]) -> _Keys:
        lexemes = sorted({r[0] for r in rows})
        term_index = {lexeme: i for i, lexeme in enumerate(lexemes)}
        idf = np.zeros(len(lexemes))
        key_term: list[int] = []
        packed: list[bytes] = []
        keys: list[npt.NDArray[np.int64]] = []
        for i, (lexeme, term_idf, _, _, key_bounds) in enumerate(rows):
            idf[term_index[lexeme]] = float(term_idf)
            key_term.append(term_index[lexeme])
            packed.append(key_bounds)
            keys.append(np.full(len(key_bounds) // _BOUNDS.itemsize, i, dtype=np.int64))
        bounds = np.frombuffer(b"".join(packed), dtype=_BOUNDS)
        meta = blockmax.BlockMeta(np.concatenate(keys), *(bounds[f].astype(np.int64) for f in _BOUNDS.names or ()))
        return cls(float(rows[0][2]), idf, np.array(key_term, dtype=np.int64), [r[3] for r in rows],
                   [r[0] for r in rows], meta)


def _fetcher(conn: psycopg.Connection[Any], keys: _Keys, k1: float, b: float) -> blockmax.Fetch:
    """blockmax's `fetch`: the postings of the masked blocks, term scores computed. A key whose blocks are
    all asked for is read whole by one range scan, the others' blocks by primary-key probes (_POSTINGS)."""
    meta, n_keys = keys.meta, len(keys.term_of_key)
    key_blocks = np.bincount(meta.key, minlength=n_keys)

    def fetch(mask: npt.NDArray[np.bool_]) -> list[blockmax.Postings]:
        chosen = np.flatnonzero(mask)
        key = meta.key[chosen]
        whole = np.flatnonzero(np.bincount(key, minlength=n_keys) == key_blocks)
        some = ~np.isin(key, whole)
        probe = chosen[some]
        found = conn.execute(_POSTINGS, [keys.collection, keys.lexeme, (whole + 1).tolist(),
                                         (key[some] + 1).tolist(), meta.blk[probe].tolist()], binary=True).fetchall()
        per_key: dict[int, list[tuple[bytes, bytes, bytes]]] = {}
        for k, docnos, tfs, lens in found:  # blocks of a key joined; keys numbered from 1 in SQL
            per_key.setdefault(k - 1, []).append((docnos, tfs, lens))
        out = []
        for k, blocks in per_key.items():
            docno, tf, length = (np.frombuffer(b"".join(x[j] for x in blocks), dtype=_PACKED[j]) for j in range(3))
            term = keys.term_of_key[k]
            contrib = blockmax.term_score(keys.idf[term], tf, length, k1, b, keys.avgdl)
            out.append(blockmax.Postings(int(term), docno.astype(np.int64), contrib))
        return out

    return fetch


def _walker(conn: psycopg.Connection[Any], filters: Filters, depth: int) -> blockmax.Walk:
    """blockmax's `walk`: the candidates that pass the filters, in rank order, at most `depth`, probed in
    batches that double."""
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

    return walk
