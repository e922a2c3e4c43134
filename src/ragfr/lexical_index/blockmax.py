"""Exact BM25 top-k over block postings (migrations/0010), with block-max early termination.

The postings of one (collection, lexeme) are blocks of up to 128 chunk numbers (docnos) with each block's
largest tf and smallest chunk length. BM25's term score rises with tf and falls with length, so
`idf * term_score(max_tf, min_len)` bounds every posting of a block, whatever k1, b and avgdl are.

The search, in docno space:
1. Terms with few postings (at most `FULL_TERM_BLOCKS` blocks: the rare, high-idf ones) are read whole.
   The others' blocks cut the docno axis into intervals; an interval's bound is the sum of the bounds of
   the blocks covering it. A chunk's score is at most its rare terms' exact score plus its interval's bound.
2. The most promising intervals are read first, within a budget of postings. Every chunk of an interval
   whose covering blocks are all read is scored exactly. Walking the exact scores through the hard
   filters gives theta, the `depth`-th best score that passes them.
3. Every interval that could still hold a chunk scoring theta or more is read and scored. The others
   cannot: their bound is below theta. The final walk runs over every exact score >= theta.

The result is the same top `depth` (scores, ids and order, ties by chunk id) as scoring every posting;
tests/lexical_index/test_scan.py checks it against the tsvector scoring on the golden set, the PIAF
subset and adversarial cases. Scores are computed with the same float64 operations, in the same order,
as the SQL of the filter-first path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

# First read: whole terms, by decreasing bound, up to this many postings (at least one term). At 100k
# chunks a bench question's terms hold 8.4k postings on average: reading them at once (two round trips)
# measured faster at p95 than a first read of 8,192 in a one-off run (the dated log, `git show
# 71a1400:docs/benchmarks.md`, "Early termination, honestly"). The bounds pay off beyond that: common words in
# larger corpora.
FIRST_READ_POSTINGS = 32768
# Summing scores per docno through an array indexed by docno (no sort) while the largest docno stays
# within this many per posting read (plus a floor): docnos are dense, but edits renumber chunk versions.
_DENSE_DOCNOS_PER_POSTING = 8
_DENSE_DOCNOS_MIN = 1 << 20
# Bounds are inflated by this relative margin: a chunk's exact score is a float sum whose rounding could
# otherwise exceed the float sum of its bounds by an ulp.
_MARGIN = 1e-9

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def term_score(
    idf: FloatArray | float, tf: npt.NDArray[np.generic], length: npt.NDArray[np.generic], k1: float, b: float,
    avgdl: float,
) -> FloatArray:
    """Okapi BM25 of one term, as `scan._BM25_FILTER_FIRST` computes it in SQL, operation for operation:
    idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * len / avgdl))."""
    tf_f = tf.astype(np.float64)
    len_f = length.astype(np.float64)
    return idf * (tf_f * (k1 + 1)) / (tf_f + k1 * (1 - b + b * len_f / avgdl))


@dataclass
class BlockMeta:
    """Every block of the query's (collection, lexeme) keys, sorted by key then docno range."""

    key: IntArray
    blk: IntArray
    lo: IntArray
    hi: IntArray
    n: IntArray
    max_tf: IntArray
    min_len: IntArray


@dataclass
class Postings:
    term: int
    docno: IntArray
    contrib: FloatArray


Fetch = Callable[[BoolArray], list[Postings]]
Walk = Callable[[IntArray, FloatArray], list[tuple[str, float]]]


@dataclass
class _Seen:
    """Every chunk in a read posting: its score so far, the bound of what unread blocks could add (0: exact),
    and which unread blocks those are (_Search.pending)."""

    docs: IntArray
    score: FloatArray
    extra: FloatArray
    where: list[tuple[IntArray, IntArray]]


@dataclass
class _Search:
    meta: BlockMeta
    term: IntArray  # per block
    ub: FloatArray  # per block: bound of any posting in it
    term_ub: FloatArray  # per term: bound of its score in any chunk
    key_slices: list[tuple[int, int, int]]  # (term, first block, one past last block) per key
    fetch: Fetch
    fetched: BoolArray = field(init=False)
    whole: BoolArray = field(init=False)  # per term: every block read
    parts: list[Postings] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.fetched = np.zeros(len(self.ub), dtype=bool)
        self.whole = np.zeros(len(self.term_ub), dtype=bool)

    def read(self, want: BoolArray) -> None:
        want = want & ~self.fetched
        if want.any():
            self.parts.extend(self.fetch(want))
            self.fetched |= want
        self.whole = np.bincount(self.term[~self.fetched], minlength=len(self.term_ub)) == 0

    def read_terms(self, terms: BoolArray) -> None:
        self.read(terms[self.term])

    def seen(self) -> tuple[IntArray, FloatArray]:
        """Every chunk in a read posting, with the sum of its read term scores, added in term order (lexemes
        sorted), as the tsvector scoring adds them (a tsvector's lexemes are sorted): the same float sum,
        hence the same ties."""
        if not self.parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        parts = sorted(self.parts, key=lambda x: x.term)
        docno = np.concatenate([x.docno for x in parts])
        contrib = np.concatenate([x.contrib for x in parts])
        # bincount adds each bin's weights in input order, from 0.0: the term order above
        if int(docno.max()) <= _DENSE_DOCNOS_PER_POSTING * len(docno) + _DENSE_DOCNOS_MIN:
            # docnos are dense (one per chunk version): bin by docno itself, without sorting
            present = np.flatnonzero(np.bincount(docno)).astype(np.int64)
            return present, np.bincount(docno, weights=contrib)[present].astype(np.float64)
        docs, inverse = np.unique(docno, return_inverse=True)
        return docs.astype(np.int64), np.bincount(inverse, weights=contrib, minlength=len(docs)).astype(np.float64)

    def pending(self, docs: IntArray) -> tuple[FloatArray, list[tuple[IntArray, IntArray]]]:
        """Per chunk, the bound of what unread blocks could add, and (chunk positions, block) pairs of
        those blocks. A chunk lies in at most one block per key (a key's blocks hold disjoint docno ranges);
        a term's keys are its collections, and a chunk is in one of them: the term adds the max over keys."""
        extra = np.zeros(len(docs))
        per_term: dict[int, FloatArray] = {}
        where: list[tuple[IntArray, IntArray]] = []
        for t, first, last in self.key_slices:
            if self.whole[t]:
                continue
            lo, hi = self.meta.lo[first:last], self.meta.hi[first:last]
            j = np.searchsorted(lo, docs, side="right") - 1
            inside = (j >= 0) & (docs <= hi[np.maximum(j, 0)])
            block = first + j
            open_ = inside & ~self.fetched[np.where(inside, block, 0)]
            if not open_.any():
                continue
            bound = np.where(open_, self.ub[np.where(open_, block, 0)], 0.0)
            per_term[t] = np.maximum(per_term[t], bound) if t in per_term else bound
            rows = np.flatnonzero(open_)
            where.append((rows, block[rows]))
        for bound in per_term.values():
            extra += bound
        return extra, where

    def look(self) -> _Seen:
        docs, score = self.seen()
        extra, where = self.pending(docs)
        return _Seen(docs, score, extra, where)

    def blocks_for(self, rows: BoolArray, where: list[tuple[IntArray, IntArray]]) -> BoolArray:
        want = np.zeros(len(self.ub), dtype=bool)
        for positions, blocks in where:
            want[blocks[rows[positions]]] = True
        return want


def top(meta: BlockMeta, idf: FloatArray, term_of_key: IntArray, k1: float, b: float, avgdl: float,
        depth: int, fetch: Fetch, walk: Walk, stats: dict[str, int] | None = None,
        verified: bool = False) -> list[tuple[str, float]]:
    """The `depth` best chunks that pass the hard filters, best first, ties by chunk id (MaxScore over
    block bounds; see the module docstring).

    `fetch(mask)` reads the postings of the masked blocks (term scores computed);
    `walk(docnos, scores)` returns the passing chunks among those candidates, in rank order, at most `depth`.
    theta is first taken from the best exact scores without asking the filters (one round trip less:
    without metadata conditions nearly every chunk passes). If fewer than `depth` of the chunks scoring
    theta or more pass, the search runs again with theta from passing chunks only (`verified`).
    """
    term = term_of_key[meta.key]
    ub = term_score(idf[term], meta.max_tf, meta.min_len, k1, b, avgdl) * (1 + _MARGIN)
    term_ub = np.zeros(len(idf))
    np.maximum.at(term_ub, term, ub)
    bounds = np.flatnonzero(np.diff(meta.key)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(meta.key)]])
    key_slices = [(int(term[s]), int(s), int(e)) for s, e in zip(starts, ends, strict=True)]
    search = _Search(meta, term, ub, term_ub, key_slices, fetch)
    theta, now = _theta(search, depth, walk, verified)
    # 4. Every chunk that may still reach theta gets its remaining blocks read; then all are exact.
    # The margin scales with the score too: a bound far below one rounding step of the partial score
    # (a term in nearly every chunk) must not drop a chunk that ties theta.
    maybe = (now.extra > 0) & ((now.score + now.extra) * (1 + _MARGIN) >= theta)
    if maybe.any():
        search.read(search.blocks_for(maybe, now.where))
        now = search.look()
    final = (now.extra == 0) & (now.score >= theta)
    passed = walk(now.docs[final], now.score[final])
    if len(passed) < depth and theta > -np.inf and not verified:
        # some of the best chunks fail the filters: theta must come from passing ones
        return top(meta, idf, term_of_key, k1, b, avgdl, depth, fetch, walk, stats, verified=True)
    if stats is not None:
        stats["blocks"] = len(ub)
        stats["blocks_read"] = int(search.fetched.sum())
        stats["postings"] = int(meta.n.sum())
        stats["postings_read"] = int(meta.n[search.fetched].sum())
    return passed


def _theta(search: _Search, depth: int, walk: Walk, verified: bool) -> tuple[float, _Seen]:
    """Steps 1 to 3 of the module docstring: theta, the `depth`-th best exact score (that passes the filters
    when `verified`; -inf while fewer are known), with every term that could still beat it read whole."""
    n_terms = len(search.term_ub)
    cost = np.bincount(search.term, weights=search.meta.n, minlength=n_terms)
    by_bound = np.argsort(-search.term_ub, kind="stable")
    # 1. The terms with the highest bounds, whole, within a budget: the chunks that can score most.
    first = np.zeros(n_terms, dtype=bool)
    first[by_bound[0]] = True
    first[by_bound[np.cumsum(cost[by_bound]) <= FIRST_READ_POSTINGS]] = True
    search.read_terms(first)
    now = search.look()
    while True:
        # 2. Exact scores for the `depth` most promising chunks seen (their blocks of the other terms), then
        #    theta: the depth-th best exact score that passes the filters (-inf while fewer pass).
        best = np.zeros(len(now.docs), dtype=bool)
        best[np.argpartition(-(now.score + now.extra), depth - 1)[:depth] if len(now.docs) > depth
             else slice(None)] = True
        if (best & (now.extra > 0)).any():
            search.read(search.blocks_for(best & (now.extra > 0), now.where))
            now = search.look()
        exact = now.extra == 0
        if verified:
            passed = walk(now.docs[exact], now.score[exact])
            theta = passed[-1][1] if len(passed) >= depth else -np.inf
        else:
            known = now.score[exact]
            cut = len(known) - depth
            theta = float(np.partition(known, cut)[cut]) if cut >= 0 else -np.inf
        # 3. MaxScore: a chunk holding none of the terms read whole scores at most the sum of the other
        #    terms' bounds. Terms outside the longest prefix (by increasing bound) whose sum stays below
        #    theta are essential: read them whole. While theta is unknown, one more term, and again.
        unread = np.flatnonzero(~search.whole)
        unread = unread[np.argsort(search.term_ub[unread], kind="stable")]
        essential = np.zeros(n_terms, dtype=bool)
        essential[unread[~(np.cumsum(search.term_ub[unread]) < theta)]] = True
        if not essential.any():
            return theta, now
        if theta == -np.inf:
            search.read_terms(np.arange(n_terms) == unread[-1])
            now = search.look()
            continue
        search.read_terms(essential)
        return theta, search.look()
