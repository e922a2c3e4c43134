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
tests/retrieval/test_lexical_blocks.py checks it against the tsvector scoring on the golden set, the PIAF
subset and adversarial cases. Scores are computed with the same float64 operations, in the same order,
as the SQL of the filter-first path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

# Terms with at most this many blocks (128 postings each) are read whole before anything else.
FULL_TERM_BLOCKS = 8
# Postings read in the first round, before theta is known.
FIRST_ROUND_POSTINGS = 4096
# Bounds are inflated by this relative margin: a chunk's exact score is a float sum whose rounding could
# otherwise exceed the float sum of its bounds by an ulp.
_MARGIN = 1e-9

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def term_score(
    idf: FloatArray | float, tf: npt.NDArray[np.generic], length: npt.NDArray[np.generic], k1: float, b: float,
    avgdl: float,
) -> FloatArray:
    """Okapi BM25 of one term, as `lexical._BM25_FILTER_FIRST` computes it in SQL, operation for operation:
    idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * len / avgdl))."""
    tf_f = tf.astype(np.float64)
    len_f = length.astype(np.float64)
    return idf * (tf_f * (k1 + 1)) / (tf_f + k1 * (1 - b + b * len_f / avgdl))


@dataclass
class BlockMeta:
    """Every block of the query's (collection, lexeme) keys: key index and the block's bounds."""

    key: IntArray
    blk: IntArray
    lo: IntArray
    hi: IntArray
    n: IntArray
    max_tf: IntArray
    min_len: IntArray


@dataclass
class Postings:
    docno: IntArray
    contrib: FloatArray


@dataclass
class Plan:
    """What was read so far and what is known about the chunks in it."""

    meta: BlockMeta
    ub: FloatArray  # per block
    full: npt.NDArray[np.bool_]  # per block: belongs to a term read whole
    fetched: npt.NDArray[np.bool_]  # per block
    edges: IntArray  # interval j is [edges[j], edges[j + 1]) of docnos, cut by the partial terms' blocks
    lo_i: IntArray  # per block: first interval it covers (partial terms only; 0 for full ones)
    hi_i: IntArray  # per block: one past its last interval
    bound: FloatArray  # per interval: sum of the partial terms' block bounds covering it
    parts: list[Postings] = field(default_factory=list)

    @property
    def intervals(self) -> int:
        return max(len(self.edges) - 1, 0)


Fetch = Callable[[npt.NDArray[np.bool_]], list[Postings]]
Walk = Callable[[IntArray, FloatArray], list[tuple[str, float]]]


def plan(meta: BlockMeta, idf: FloatArray, term_of_key: IntArray, k1: float, b: float, avgdl: float) -> Plan:
    """Block bounds, the split into rare (read whole) and common terms, and the common terms' intervals."""
    term = term_of_key[meta.key]
    ub = term_score(idf[term], meta.max_tf, meta.min_len, k1, b, avgdl) * (1 + _MARGIN)
    blocks_per_term = np.bincount(term, minlength=len(idf))
    full = blocks_per_term[term] <= FULL_TERM_BLOCKS
    part = ~full
    edges = np.unique(np.concatenate([meta.lo[part], meta.hi[part] + 1])).astype(np.int64)
    lo_i = np.zeros(len(ub), dtype=np.int64)
    hi_i = np.zeros(len(ub), dtype=np.int64)
    lo_i[part] = np.searchsorted(edges, meta.lo[part])
    hi_i[part] = np.searchsorted(edges, meta.hi[part] + 1)
    n_int = max(len(edges) - 1, 0)
    diff = np.zeros(n_int + 1)
    np.add.at(diff, lo_i[part], ub[part])
    np.add.at(diff, hi_i[part], -ub[part])
    # A running sum of +/- bounds can end a hair above or below the true sum: pad by the largest sum.
    bound = np.cumsum(diff)[:n_int]
    bound = bound + _MARGIN * (float(ub[part].sum()) if part.any() else 0.0)
    return Plan(meta, ub, full, np.zeros(len(ub), dtype=bool), edges, lo_i, hi_i, bound)


def _interval_of(p: Plan, docno: IntArray) -> IntArray:
    """Interval index of each docno; -1 when no partial term's block covers it."""
    j = np.searchsorted(p.edges, docno, side="right") - 1
    j[(j < 0) | (j >= p.intervals)] = -1
    return j


def _incomplete(p: Plan) -> npt.NDArray[np.bool_]:
    """Per interval: some partial-term block covering it is still unread."""
    waiting = ~p.full & ~p.fetched
    diff = np.zeros(p.intervals + 1, dtype=np.int64)
    np.add.at(diff, p.lo_i[waiting], 1)
    np.add.at(diff, p.hi_i[waiting], -1)
    return np.cumsum(diff)[: p.intervals] > 0


def _blocks_over(p: Plan, chosen: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """Partial-term blocks covering at least one chosen interval."""
    cnt = np.concatenate([[0], np.cumsum(chosen)])
    return ~p.full & ((cnt[p.hi_i] - cnt[p.lo_i]) > 0)


def _read(p: Plan, want: npt.NDArray[np.bool_], fetch: Fetch) -> None:
    want = want & ~p.fetched
    if want.any():
        p.parts.extend(fetch(want))
        p.fetched |= want


def _exact(p: Plan) -> tuple[IntArray, FloatArray, IntArray, FloatArray]:
    """(docnos, scores) of every chunk whose score is fully known, and (interval, partial score) of the
    others (their read postings only)."""
    if not p.parts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, np.zeros(0), empty, np.zeros(0)
    docno = np.concatenate([x.docno for x in p.parts])
    contrib = np.concatenate([x.contrib for x in p.parts])
    docs: IntArray
    docs, inverse = np.unique(docno, return_inverse=True)
    score: FloatArray = np.bincount(inverse, weights=contrib, minlength=len(docs)).astype(np.float64)
    interval = _interval_of(p, docs)
    open_ = np.append(_incomplete(p), False)  # index -1 (no partial block covers it): never open
    done = ~open_[interval]
    return docs[done], score[done], interval[~done], score[~done]


def top(meta: BlockMeta, idf: FloatArray, term_of_key: IntArray, k1: float, b: float, avgdl: float,
        depth: int, fetch: Fetch, walk: Walk, stats: dict[str, int] | None = None) -> list[tuple[str, float]]:
    """The `depth` best chunks that pass the hard filters, best first, ties by chunk id.

    `fetch(mask)` reads the postings of the masked blocks (term contributions computed);
    `walk(docnos, scores)` returns the passing chunks among those candidates, in rank order, at most `depth`.
    """
    p = plan(meta, idf, term_of_key, k1, b, avgdl)
    _read(p, p.full, fetch)  # rare terms, whole
    if p.intervals:
        _, _, open_interval, open_partial = _exact(p)
        # Rare-term scores of chunks not yet complete raise their interval's priority.
        boost = np.zeros(p.intervals)
        np.maximum.at(boost, open_interval, open_partial)
        priority = p.bound + boost
        order = np.argsort(-priority, kind="stable")
        # First round: the longest prefix of intervals, by priority, whose blocks fit the budget.
        lo, hi = 1, p.intervals
        while lo < hi:
            mid = (lo + hi + 1) // 2
            chosen = np.zeros(p.intervals, dtype=bool)
            chosen[order[:mid]] = True
            need = _blocks_over(p, chosen) & ~p.fetched
            if int(p.meta.n[need].sum()) <= FIRST_ROUND_POSTINGS:
                lo = mid
            else:
                hi = mid - 1
        chosen = np.zeros(p.intervals, dtype=bool)
        chosen[order[:lo]] = True
        _read(p, _blocks_over(p, chosen), fetch)
    docs, scores, _, _ = _exact(p)
    passed = walk(docs, scores)
    theta = passed[-1][1] if len(passed) >= depth else -np.inf
    if p.intervals:
        _, _, open_interval, open_partial = _exact(p)
        boost = np.zeros(p.intervals)
        np.maximum.at(boost, open_interval, open_partial)
        # Intervals that may still hold a chunk scoring theta or more; all of them when theta is unknown.
        needed = _incomplete(p) & (p.bound + boost >= theta)
        if needed.any():
            _read(p, _blocks_over(p, needed), fetch)
            docs, scores, _, _ = _exact(p)
            keep = scores >= theta
            passed = walk(docs[keep], scores[keep])
    if stats is not None:
        stats["blocks"] = len(p.ub)
        stats["blocks_read"] = int(p.fetched.sum())
        stats["postings"] = int(p.meta.n.sum())
        stats["postings_read"] = int(p.meta.n[p.fetched].sum())
    return passed
