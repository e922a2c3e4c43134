"""Evidence features (issue 38 item 1): values against hand-computed ones, and on every real search (real
PostgreSQL, the real offline e5 embedder), printed by `ragfr search --json`."""

from __future__ import annotations

import json
import math

import psycopg
import pytest
from tests.support.contract import CONTRACT_ARTICLES, E5

from ragfr.analysis.french import query_terms
from ragfr.cli import main as cli_main
from ragfr.embed import load_embedder
from ragfr.gate import fitted
from ragfr.gate.features import BM25, COSINE, FEATURES, ArmList, TermStats, compute, rrf1
from ragfr.ingest import ChunkConfig, Document, ingest_documents
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.hybrid import search

DOCS = {name: text for name, text in CONTRACT_ARTICLES.items() if name != "prime"}
NO_RERANK = SearchConfig(k=5, rerank=False)


def test_features_hand_computed() -> None:
    # 100 passages; "franchise" in 1 of them (rare), "montant" in 30, "pingouin" in none
    franchise, montant, pingouin = terms = query_terms("franchise montant pingouin")
    stats = TermStats(100, {franchise: 1, montant: 30})
    idf = {t: math.log(1 + (100 - df + 0.5) / (df + 0.5)) for t, df in ((franchise, 1), (montant, 30),
                                                                          (pingouin, 0))}
    mass = sum(idf.values())
    lex = ArmList(["a", "b", "c"], {"a": 6.0, "b": 4.5, "c": 1.0})
    sem = ArmList(["b", "a", "d"], {"b": 0.9, "a": 0.8, "d": 0.7})
    f = compute(terms, stats, {BM25: lex, COSINE: sem},
                ["La franchise du contrat.", "Le montant est fixe.", "Rien."], rrf_top=1 / 61 + 1 / 62, rrf_k=60, n_arms=2)
    assert list(f) == list(FEATURES)
    assert f["cos1"] == 0.9 and f["cos3"] == pytest.approx(0.8) and f["cos_margin"] == pytest.approx(0.1)
    assert f["cos_spread"] == pytest.approx(0.2)
    assert f["bm25_rel"] == pytest.approx(6.0 / mass) and f["bm25_margin"] == pytest.approx(0.25)
    assert f["idf_cover1"] == pytest.approx(idf[franchise] / mass)
    assert f["idf_cover3"] == pytest.approx((idf[franchise] + idf[montant]) / mass)
    assert f["rare_cover3"] == pytest.approx(0.5)  # franchis held, pingouin (held by no passage) not
    assert f["absent_idf"] == pytest.approx(idf[pingouin] / mass)
    assert f["agree_sem_in_lex"] == 0.5 and f["agree_lex_in_sem"] == 0.5 and f["overlap5"] == pytest.approx(0.4)
    assert f["rrf1"] == pytest.approx((1 / 61 + 1 / 62) / (2 / 61)) and f["n_terms"] == pytest.approx(math.log(4))


@pytest.mark.parametrize("n_arms", [1, 2, 3, 5])
def test_rrf1_reads_the_same_for_any_number_of_arms(n_arms: int) -> None:
    """Rank 1 in every arm that ran is 1.0, rank 1 in one arm of n is 1/n: the feature means the same whether
    one, two or five arms fused (the earlier fixed 2/(k+1) read 0.5 for a lone arm's best and 1.5 for three)."""
    k = 60
    assert rrf1(n_arms / (k + 1), k, n_arms) == pytest.approx(1.0)
    assert rrf1(1 / (k + 1), k, n_arms) == pytest.approx(1 / n_arms)
    assert rrf1(None, k, n_arms) == 0.0


def test_two_arms_keep_the_value_the_shipped_coefficients_were_fitted_on() -> None:
    """With the two built-in arms rrf1 is exactly the earlier top / (2/(k+1)): the shipped e5 gate's
    probabilities and decisions are unchanged, over the fused top scores two arms can give (ranks 1-30 each)."""
    gate = fitted.load(E5)
    assert gate is not None
    base = dict(zip(FEATURES, gate.mean, strict=True))
    for k in (20, 60):
        for r1 in range(1, 31):
            for r2 in [*range(1, 31), None]:
                top = 1 / (k + r1) + (1 / (k + r2) if r2 else 0.0)
                before = {**base, "rrf1": top / (2.0 / (k + 1))}
                after = {**base, "rrf1": rrf1(top, k, 2)}
                assert after["rrf1"] == before["rrf1"]
                assert gate.decide(after) == gate.decide(before)


def test_features_without_an_arm_are_zeros() -> None:
    f = compute([], TermStats(10, {}), {}, [], rrf_top=None, rrf_k=60, n_arms=0)
    assert f == dict.fromkeys(FEATURES, 0.0)


@pytest.fixture(scope="module")
def e5():
    return load_embedder(E5, cache=False)


@pytest.fixture
def kb(migrated_db, e5):
    dsn = migrated_db(dims=384, model=E5)
    with psycopg.connect(dsn, autocommit=True) as conn:
        docs = [Document(text=t, source=f"{name}.txt") for name, t in DOCS.items()]
        ingest_documents(conn, "contrat", docs, e5, ChunkConfig(size=1000, overlap=0), progress=False)
        yield dsn, conn


def test_every_search_carries_its_evidence(kb, e5) -> None:
    _, conn = kb
    inside = search(conn, "Quelle franchise reste à la charge de l'assuré ?", collections=["contrat"], embedder=e5,
                    config=NO_RERANK)
    outside = search(conn, "Quel club de football a gagné la coupe du monde des clubs ?", collections=["contrat"],
                     embedder=e5, config=NO_RERANK)
    for r in (inside, outside):
        assert list(r.evidence) == list(FEATURES)
        assert r.evidence["cos1"] == max(h.scores.get("semantic") or 0.0 for h in r.hits)  # the arm's best is shown here
    assert "franchise" in inside.hits[0].text.lower()
    assert inside.evidence["idf_cover1"] == pytest.approx(1.0)  # every word of the question is in the top passage
    assert inside.evidence["absent_idf"] == 0.0
    # none of football, club, coupe, monde is in the contract: the words say so, whatever the ranks say
    assert outside.evidence["absent_idf"] > 0.5 and outside.evidence["idf_cover3"] < 0.5
    assert outside.evidence["cos1"] < inside.evidence["cos1"]


def test_cli_search_json_prints_the_evidence(kb, capsys) -> None:
    dsn, _ = kb
    rc = cli_main(["search", "--dsn", dsn, "--collection", "contrat", "--no-rerank", "-k", "3", "--json",
                   "délai de préavis pour résilier"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["evidence"]) == list(FEATURES) and out["evidence"]["idf_cover3"] > 0
