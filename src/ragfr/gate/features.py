"""Evidence features of one search: absolute signals the arms already computed, which the rank-only gate
never read (issue 38 item 1). No model call: the arms' own scores and ranks, the question's lexemes, their
document frequencies in the searched collections (one primary-key read of ragfr_term_stats) and the
lexemes of the top passages (analysed in Python exactly as the database indexes them).

Why each family: RRF is rank-only, so an off-domain question whose nearest passages agree across arms looks
like a good match. What differs is absolute:
  - cosine of the vector arm's best passages (how close the nearest text is; per embedding model, so the
    decision that reads it is fitted per model: ragfr.gate.fitted);
  - BM25 of the lexical arm's best passage against what a passage holding every query word once would score
    (sum of the words' idf): "the question's words are here", scaled by their rarity;
  - the share of the question's RARE words (its idf mass) that the top passages hold, and the share the
    collection does not hold at all (a word no document has: the question is about something else);
  - agreement and margins between the arms (the same passage first in both; how far the best stands out).
Every feature is a float, the same keys for every search (zeros when an arm did not run), so the fitted
decision and `ragfr search --json` read one fixed vector.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from ragfr.analysis.french import analyze

# The vector every fitted decision reads, in this order (ragfr.gate.fitted checks its file names
# the same). Adding a feature means refitting the shipped coefficients.
FEATURES = (
    "cos1",          # vector arm: cosine similarity of its best passage
    "cos3",          # mean cosine of its best three
    "cos_margin",    # cos1 - cosine of its second
    "cos_spread",    # cos1 - cosine of its tenth (or last): does the best stand out of the crowd
    "bm25_rel",      # lexical arm's best BM25 / sum of the question words' idf (absent words included)
    "bm25_margin",   # (best - second) / best, lexical arm
    "idf_cover1",    # idf mass of the question's words that the fused top passage holds
    "idf_cover3",    # ... that the fused top three hold together
    "rare_cover3",   # share of the question's rare words (df <= 2 % of the passages) the top three hold
    "absent_idf",    # idf mass of the question's words that no passage of the collections holds
    "agree_sem_in_lex",  # 1 / lexical rank of the vector arm's best passage (0: not returned)
    "agree_lex_in_sem",  # 1 / vector rank of the lexical arm's best passage
    "overlap5",      # share of the two arms' top 5 that is common
    "rrf1",          # the fused top RRF score over its maximum (rank 1 in every arm that ran): the rank rule's input
    "n_terms",       # log(1 + number of significant query words)
)
RARE_SHARE = 0.02  # a word is rare when at most this share of the searched passages hold it
TOP = 3  # what the chat model receives


@dataclass(frozen=True)
class TermStats:
    """Passages in the searched collections and, per query lexeme, how many hold it (0: none)."""

    n_docs: int
    df: Mapping[str, int]

    def idf(self, lexeme: str) -> float:
        """BM25's idf, as the lexical arm computes it (ragfr.retrieval.lexical._STATS_AND_IDF)."""
        df = self.df.get(lexeme, 0)
        return math.log(1 + (self.n_docs - df + 0.5) / (df + 0.5))


def term_stats(conn: psycopg.Connection[Any], collections: Sequence[str], terms: Sequence[str],
               n_docs: int) -> TermStats:
    """Document frequencies of `terms` summed over `collections` (the statistics BM25 reads, kept exact by
    triggers). `n_docs`: passages in the collections, which the search already counted."""
    if not terms:
        return TermStats(n_docs, {})
    rows = conn.execute(
        "SELECT lexeme, sum(df) FROM ragfr_term_stats WHERE collection_name = ANY(%s) AND lexeme = ANY(%s)"
        " GROUP BY lexeme", (list(collections), list(terms)),
    ).fetchall()
    return TermStats(n_docs, {str(r[0]): int(r[1]) for r in rows})


@dataclass(frozen=True)
class ArmList:
    """One arm's answer as the features read it: ids best first and the arm's score of each."""

    ids: Sequence[str]
    scores: Mapping[str, float]


# What an arm's scores are (Arm.evidence), the key of its list in `compute`'s `arms`.
COSINE = "cosine"  # cosine similarity in the embedding space
BM25 = "bm25"  # French BM25 of the question's terms


def compute(terms: Sequence[str], stats: TermStats, arms: Mapping[str, ArmList], top_texts: Sequence[str],
            rrf_top: float | None, rrf_k: int, *, n_arms: int) -> dict[str, float]:
    """Every feature of FEATURES. `arms`: each arm's list by what its scores are (COSINE, BM25; absent when no
    such arm ran); `top_texts`: the fused top passages' texts, best first (the first TOP are read);
    `rrf_top`: the fused top score (None: no hit); `n_arms`: how many arms ran (fused into `rrf_top`)."""
    out = dict.fromkeys(FEATURES, 0.0)
    out.update(_vector(arms.get(COSINE)))
    out.update(_words(terms, stats, arms.get(BM25), top_texts))
    out.update(_agreement(arms.get(BM25), arms.get(COSINE)))
    out["rrf1"] = rrf1(rrf_top, rrf_k, n_arms)
    out["n_terms"] = math.log1p(len(terms))
    return out


def rrf1(rrf_top: float | None, rrf_k: int, n_arms: int) -> float:
    """The fused top score over the best any passage can score: rank 1 in each of the `n_arms` arms that ran,
    n/(k+1). In [0, 1] whatever the number of arms; with the two built-in arms it is the value the shipped
    coefficients were fitted on (the earlier fixed 2/(k+1))."""
    return (rrf_top or 0.0) / (max(1, n_arms) / (rrf_k + 1))


def _vector(sem: ArmList | None) -> dict[str, float]:
    if sem is None or not sem.ids:
        return {}
    cos = [float(sem.scores[i]) for i in sem.ids[:10]]
    return {"cos1": cos[0], "cos3": sum(cos[:3]) / len(cos[:3]),
            "cos_margin": cos[0] - cos[1] if len(cos) > 1 else 0.0, "cos_spread": cos[0] - cos[-1]}


def _words(terms: Sequence[str], stats: TermStats, lex: ArmList | None, top_texts: Sequence[str]) -> dict[str, float]:
    if not terms:
        return {}
    idf = {t: stats.idf(t) for t in terms}
    mass = sum(idf.values()) or 1.0
    held = [set(analyze(text)) for text in top_texts[:TOP]]
    in_top3 = set().union(*held) if held else set()
    rare = [t for t in terms if stats.df.get(t, 0) <= RARE_SHARE * stats.n_docs]
    out = {
        "idf_cover1": sum(idf[t] for t in terms if held and t in held[0]) / mass,
        "idf_cover3": sum(idf[t] for t in terms if t in in_top3) / mass,
        "rare_cover3": sum(t in in_top3 for t in rare) / len(rare) if rare else 1.0,
        "absent_idf": sum(idf[t] for t in terms if stats.df.get(t, 0) == 0) / mass,
    }
    if lex is not None and lex.ids:
        best = float(lex.scores[lex.ids[0]])
        second = float(lex.scores[lex.ids[1]]) if len(lex.ids) > 1 else 0.0
        out["bm25_rel"] = best / mass
        out["bm25_margin"] = (best - second) / best if best > 0 else 0.0
    return out


def _agreement(lex: ArmList | None, sem: ArmList | None) -> dict[str, float]:
    if lex is None or sem is None or not lex.ids or not sem.ids:
        return {}
    lex_rank = {doc: r for r, doc in enumerate(lex.ids, 1)}
    sem_rank = {doc: r for r, doc in enumerate(sem.ids, 1)}
    return {
        "agree_sem_in_lex": 1.0 / lex_rank[sem.ids[0]] if sem.ids[0] in lex_rank else 0.0,
        "agree_lex_in_sem": 1.0 / sem_rank[lex.ids[0]] if lex.ids[0] in sem_rank else 0.0,
        "overlap5": len(set(lex.ids[:5]) & set(sem.ids[:5])) / 5.0,
    }
