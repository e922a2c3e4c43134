"""Metrics against values worked out by hand (shown in each test), never against the code itself."""

import math

import pytest

from ragfr.eval.metrics import mean_scores, mrr_at_k, ndcg_at_k, recall_at_k, score_query

RANKING = ["d3", "d1", "d7", "d2", "d9"]
JUDGED = {"d1": 2, "d2": 1, "d4": 1, "d8": 0}  # d8 judged non-relevant; d4 never retrieved


def test_recall_counts_relevant_found_over_all_relevant() -> None:
    assert recall_at_k(RANKING, JUDGED, 1) == 0.0  # d3 not relevant
    assert recall_at_k(RANKING, JUDGED, 2) == pytest.approx(1 / 3)  # d1 of {d1, d2, d4}
    assert recall_at_k(RANKING, JUDGED, 5) == pytest.approx(2 / 3)  # d1, d2
    assert recall_at_k(RANKING, JUDGED, 100) == pytest.approx(2 / 3)


def test_grade_zero_is_not_relevant() -> None:
    assert recall_at_k(["d8"], {"d8": 0, "d1": 1}, 1) == 0.0
    assert mrr_at_k(["d8", "d1"], {"d8": 0, "d1": 1}, 10) == 0.5


def test_mrr_is_reciprocal_of_first_relevant_rank_within_k() -> None:
    assert mrr_at_k(RANKING, JUDGED, 10) == 0.5  # d1 at rank 2
    assert mrr_at_k(RANKING, JUDGED, 1) == 0.0  # cut before d1
    assert mrr_at_k(["x", "y", "z", "d4"], JUDGED, 10) == 0.25


def test_ndcg_uses_linear_gain_and_log2_discount() -> None:
    # DCG@5 = 0/log2(2) + 2/log2(3) + 0/log2(4) + 1/log2(5) + 0 = 1.26186 + 0.43068 = 1.69254
    # ideal grades [2, 1, 1]: 2/1 + 1/log2(3) + 1/2 = 3.13093
    expected = (2 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3) + 0.5)
    assert expected == pytest.approx(0.54059, abs=1e-5)
    assert ndcg_at_k(RANKING, JUDGED, 5) == pytest.approx(expected)
    # cut at 2: DCG = 2/log2(3) = 1.26186; ideal@2 = 2 + 1/log2(3) = 2.63093
    assert ndcg_at_k(RANKING, JUDGED, 2) == pytest.approx(0.47963, abs=1e-5)


def test_perfect_ranking_scores_one() -> None:
    assert ndcg_at_k(["d1", "d2", "d4"], JUDGED, 10) == pytest.approx(1.0)
    # grade 1 before grade 2 is not perfect: (1 + 2/log2 3) / (2 + 1/log2 3) = 2.26186 / 2.63093
    assert ndcg_at_k(["d2", "d1"], {"d1": 2, "d2": 1}, 10) == pytest.approx(0.85972, abs=1e-5)


def test_undefined_without_relevant_documents() -> None:
    with pytest.raises(ValueError):
        recall_at_k(["a"], {"a": 0}, 10)
    with pytest.raises(ValueError):
        ndcg_at_k(["a"], {}, 10)


def test_score_query_and_mean() -> None:
    one = score_query("q1", RANKING, JUDGED, recall_ks=(1, 5), mrr_k=10, ndcg_k=10)
    two = score_query("q2", ["d4"], {"d4": 1}, recall_ks=(1, 5), mrr_k=10, ndcg_k=10)
    assert one.first_relevant == 2 and two.first_relevant == 1
    mean = mean_scores([one, two])
    assert mean["recall@1"] == 0.5  # (0 + 1) / 2
    assert mean["recall@5"] == pytest.approx((2 / 3 + 1) / 2)
    assert mean["mrr@10"] == 0.75  # (1/2 + 1) / 2


def test_duplicate_documents_in_a_ranking_are_refused() -> None:
    with pytest.raises(ValueError):
        score_query("q", ["d1", "d1"], {"d1": 1})
