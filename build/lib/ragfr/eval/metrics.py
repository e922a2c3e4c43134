"""Ranking metrics over graded qrels, per query and averaged.

Conventions (the ones BEIR/pytrec_eval use, so numbers compare with published tables):
- recall@k = |relevant in top k| / |relevant| (relevant = grade > 0);
- MRR@k = 1 / rank of the first relevant document within the top k, else 0;
- nDCG@k with linear gain (grade) and log2(rank + 1) discount, normalised by the ideal ordering of the
  judged grades. A query with no relevant document is excluded from the averages rather than counted 0,
  because it cannot be answered by any system.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_RECALL_KS = (1, 5, 10, 50, 100)
DEFAULT_MRR_K = 10
DEFAULT_NDCG_K = 10


def recall_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    relevant = {doc for doc, grade in judged.items() if grade > 0}
    if not relevant:
        raise ValueError("recall is undefined for a query without relevant documents")
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    for rank, doc in enumerate(ranking[:k], 1):
        if judged.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def dcg(grades: Sequence[int]) -> float:
    return sum(grade / math.log2(rank + 1) for rank, grade in enumerate(grades, 1))


def ndcg_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    ideal = dcg(sorted((g for g in judged.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        raise ValueError("nDCG is undefined for a query without relevant documents")
    return dcg([max(judged.get(doc, 0), 0) for doc in ranking[:k]]) / ideal


def first_relevant_rank(ranking: Sequence[str], judged: Mapping[str, int]) -> int | None:
    for rank, doc in enumerate(ranking, 1):
        if judged.get(doc, 0) > 0:
            return rank
    return None


@dataclass(frozen=True)
class QueryScores:
    query_id: str
    values: dict[str, float]
    first_relevant: int | None


def metric_names(recall_ks: Sequence[int] = DEFAULT_RECALL_KS, mrr_k: int = DEFAULT_MRR_K,
                 ndcg_k: int = DEFAULT_NDCG_K) -> list[str]:
    return [f"recall@{k}" for k in recall_ks] + [f"mrr@{mrr_k}", f"ndcg@{ndcg_k}"]


def score_query(query_id: str, ranking: Sequence[str], judged: Mapping[str, int],
                recall_ks: Sequence[int] = DEFAULT_RECALL_KS, mrr_k: int = DEFAULT_MRR_K,
                ndcg_k: int = DEFAULT_NDCG_K) -> QueryScores:
    if len(set(ranking)) != len(ranking):
        raise ValueError(f"query {query_id}: ranking lists a document twice")
    values = {f"recall@{k}": recall_at_k(ranking, judged, k) for k in recall_ks}
    values[f"mrr@{mrr_k}"] = mrr_at_k(ranking, judged, mrr_k)
    values[f"ndcg@{ndcg_k}"] = ndcg_at_k(ranking, judged, ndcg_k)
    return QueryScores(query_id, values, first_relevant_rank(ranking, judged))


def mean_scores(per_query: Sequence[QueryScores]) -> dict[str, float]:
    if not per_query:
        return {}
    names = list(per_query[0].values)
    return {name: sum(q.values[name] for q in per_query) / len(per_query) for name in names}
