"""The relevance an analyst reads beside each passage (ragfr.gate.relevance, issue 47 item 5): in [0, 1],
never rising down the list (Open WebUI re-sorts merged results by it), the search's evidence for the top
passage, for the fitted gate and for the rank rule alike."""

from __future__ import annotations

import random

import pytest
from tests.support.gate import hide_model_free_gate

from ragfr.gate import fitted, relevance
from ragfr.gate.features import FEATURES, rrf1

E5 = "local:multilingual-e5-small"
K = 60


def test_top_passage_reads_the_evidence_and_the_rest_scale_by_their_fused_score() -> None:
    scores = [2 / 61, 1 / 61 + 1 / 63, 1 / 62, 1 / 70]
    got = relevance.passages(0.9, scores, scores[0])
    assert got == pytest.approx([0.9 * s / scores[0] for s in scores])
    assert got[0] == pytest.approx(0.9)


def test_bounds_and_never_rising_on_any_order_even_after_a_reranker() -> None:
    rng = random.Random(47)
    for _ in range(500):
        scores = [rng.uniform(0.0, 2 / 61) for _ in range(rng.randint(1, 12))]
        top = max(scores) * rng.choice([1.0, 1.3])  # 1.3: the fused first was dropped by a reranker
        evidence = rng.uniform(-0.2, 1.2)  # clamped, whatever a caller passes
        got = relevance.passages(evidence, scores, top)  # scores in any order: a reranker's
        assert all(0.0 <= r <= 1.0 for r in got), got
        assert got == sorted(got, reverse=True), got
        fused = sorted(scores, reverse=True)
        assert relevance.passages(evidence, fused, top) == pytest.approx(
            [min(1.0, max(0.0, evidence)) * s / top for s in fused])


def test_equal_fused_scores_read_equal_so_a_stable_sort_keeps_the_fused_order() -> None:
    got = relevance.passages(0.8, [2 / 61, 1 / 61, 1 / 61], 2 / 61)
    assert got[1] == got[2]


def test_a_model_nobody_fitted_reads_the_model_free_gates_probability() -> None:
    gate = fitted.load("ollama:no-fit-here")
    assert gate is not None and gate.source == "models/any-model.json"
    features = dict.fromkeys(FEATURES, 0.4) | {"rrf1": 0.9}
    assert relevance.search_evidence("ollama:no-fit-here", features) == pytest.approx(gate.probability(features))


def test_rank_rule_reads_the_fused_score_over_its_best_possible(monkeypatch) -> None:
    """Without any fitted gate (the package lacking the model-free one): evidence is `rrf1`, so a passage reads
    rrf_i / (n/(k+1)); the rank rule answers only from 1/61 + 1/63 on, which reads 98.4 %."""
    hide_model_free_gate(monkeypatch)
    top = 1 / 61 + 1 / 63
    features = dict.fromkeys(FEATURES, 0.0) | {"rrf1": rrf1(top, K, 2)}
    evidence = relevance.search_evidence("ollama:no-fit-here", features)
    assert evidence == pytest.approx(top / (2 / 61))
    assert relevance.passages(evidence, [top, 1 / 64], top)[0] == pytest.approx(0.984, abs=1e-3)
    assert relevance.search_evidence(None, features) == evidence


def test_fitted_gate_reads_its_probability() -> None:
    gate = fitted.load(E5)
    assert gate is not None
    features = dict.fromkeys(FEATURES, 0.5) | {"cos1": 0.9, "rrf1": 1.0}
    assert relevance.search_evidence(E5, features) == gate.probability(features)
    assert gate.decide(features)[1] == relevance.search_evidence(E5, features)


def test_a_subject_no_document_names_caps_what_the_analyst_reads(monkeypatch) -> None:
    """A strong absence lowers the verdict (ragfr.gate.rank.with_subject) whatever p says: the passages beside
    « aucun des documents joints ne mentionne … » never read above the cap, and a weaker reading is kept."""
    gate = fitted.load(E5)
    assert gate is not None
    # a search whose best passage holds every word of the question, first in both arms
    sure = {"cos1": 0.9, "cos3": 0.88, "cos_margin": 0.03, "cos_spread": 0.1, "bm25_rel": 0.8, "bm25_margin": 0.3,
            "idf_cover1": 1.0, "idf_cover3": 1.0, "rare_cover3": 1.0, "absent_idf": 0.0, "agree_sem_in_lex": 1.0,
            "agree_lex_in_sem": 1.0, "overlap5": 0.6, "rrf1": 1.0, "n_terms": 1.6}
    assert set(sure) == set(FEATURES)
    p = relevance.search_evidence(E5, sure)
    assert p > relevance.SUBJECT_ABSENT_CAP
    assert relevance.search_evidence(E5, sure, subject_absent=True) == relevance.SUBJECT_ABSENT_CAP
    hide_model_free_gate(monkeypatch)  # the rank rule's reading: rrf1 itself
    weak = dict.fromkeys(FEATURES, 0.0) | {"rrf1": 0.3}
    assert relevance.search_evidence("ollama:no-fit-here", weak, subject_absent=True) == pytest.approx(0.3)


def test_a_search_with_no_features_reads_as_the_rank_rule_decides_it() -> None:
    """The same reading as the decision: an empty feature mapping is not zero evidence (ragfr.gate.rank.decide)."""
    assert relevance.search_evidence("ollama:no-fit-here", {}) == 0.0
    assert relevance.search_evidence("ollama:no-fit-here", {"rrf1": 0.9}) != pytest.approx(0.9)
