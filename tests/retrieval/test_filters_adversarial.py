"""Hard filters must hold in both arms without silently shrinking the answer.

Geometry comes from tests/support/geometry.py (chosen cosines; see its docstring for why a stub is right
here). Each scenario also runs a NAIVE implementation kept in this file (HNSW top-N, then filter in
Python; or raw-score fusion) and asserts that the naive one FAILS it, so every test here can fail.
"""

from __future__ import annotations

import random

import psycopg
import pytest
from tests.support.geometry import at_cosine, insert, literal, query_direction

from ragfr.filters.grammar import Condition
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.hybrid import search

Q = query_direction()
# exact_threshold=10 forces the HNSW path; enable_seqscan=off (set per test) keeps the planner on the index.
HNSW_ONLY = SearchConfig(k=5, lexical=False, semantic_depth=10, exact_threshold=10, ef_search=40)


def naive_post_filter(conn: psycopg.Connection, keep, depth: int) -> list[str]:  # type: ignore[no-untyped-def, type-arg]
    """What many stacks do: nearest neighbours first, filter afterwards."""
    rows = conn.execute(
        "SELECT id, collection_name, vmetadata FROM document_chunk ORDER BY vector <=> %s::vector LIMIT %s",
        (literal(Q), depth),
    ).fetchall()
    return [r[0] for r in rows if keep(r[1], r[2])]


@pytest.fixture
def conn(migrated_db):
    with psycopg.connect(migrated_db(), autocommit=True) as c:
        # No planner settings here: once ragfr has chosen the HNSW strategy it must keep the planner on the
        # index by itself (small tables otherwise get a bitmap scan + sort, and no iterative scan runs).
        yield c


def test_all_nearest_neighbours_fail_the_filter(conn) -> None:
    rng = random.Random(7)
    rows = [(f"near{i:04d}", at_cosine(0.95, rng), "other", "voisin", {"produit": "auto"}) for i in range(400)]
    rows += [(f"want{i:02d}", at_cosine(0.30 + i / 1000, rng), "mine", "cible", {"produit": "habitation"})
             for i in range(30)]
    rows += [(f"mine_auto{i:03d}", at_cosine(0.9, rng), "mine", "leurre", {"produit": "auto"}) for i in range(40)]
    insert(conn, rows)
    cond = [Condition("produit", "eq", ("habitation",))]
    result = search(conn, "cible", collections=["mine"], conditions=cond, query_vector=Q,
                    config=HNSW_ONLY.with_(exact_threshold=1))
    assert [h.id for h in result.hits] == ["want29", "want28", "want27", "want26", "want25"]
    assert result.arms["semantic"].strategy == "hnsw"
    assert not result.underfilled
    naive = naive_post_filter(conn, lambda c, m: c == "mine" and m["produit"] == "habitation", 10)
    assert naive == [], "the naive post-filter should find nothing here, or this test proves nothing"


def test_rare_class_is_found(conn) -> None:
    rng = random.Random(11)
    rows = [(f"c{i:05d}", at_cosine(rng.uniform(0.6, 0.95), rng), "kb", "commun", {"classe": "commune"})
            for i in range(2000)]
    rare = [(f"rare{i}", at_cosine(rng.uniform(0.1, 0.4), rng), "kb", "rare", {"classe": "rare"}) for i in range(7)]
    insert(conn, rows + rare)  # 7 / 2007 = 0.35%
    result = search(conn, "rare", collections=["kb"], conditions=[Condition("classe", "eq", ("rare",))],
                    query_vector=Q, config=HNSW_ONLY.with_(k=7, semantic_depth=7, exact_threshold=1))
    assert sorted(h.id for h in result.hits) == sorted(r[0] for r in rare)
    assert naive_post_filter(conn, lambda c, m: m["classe"] == "rare", 50) == []


def test_small_passing_set_is_scored_exactly(conn) -> None:
    rng = random.Random(5)
    rows = [(f"c{i:04d}", at_cosine(0.9, rng), "kb", "commun", {"an": 2020}) for i in range(500)]
    rows += [(f"r{i}", at_cosine(0.2 + i / 20, rng), "kb", "rare", {"an": 2024}) for i in range(4)]
    insert(conn, rows)
    result = search(conn, "x", collections=["kb"], conditions=[Condition("an", "gte", ("2023",))],
                    query_vector=Q, config=HNSW_ONLY.with_(exact_threshold=100))
    assert result.arms["semantic"].strategy == "exact"
    assert result.arms["semantic"].passing == 4
    assert [h.id for h in result.hits] == ["r3", "r2", "r1", "r0"]


def test_broad_arm_cannot_starve_the_narrow_one(conn) -> None:
    rng = random.Random(3)
    # 60 chunks match the words of the query (the broad lexical arm); one chunk has none of its words but is
    # by far the closest in meaning (the narrow semantic arm, narrowed by its similarity floor).
    rows = [(f"lex{i:02d}", at_cosine(0.05, rng), "kb", "franchise sinistre franchise " * (1 + i % 3), {})
            for i in range(60)]
    rows.append(("meaning", at_cosine(0.99, rng), "kb", "montant restant à la charge de l'assuré", {}))
    # Unrelated chunks make the query words rare (high idf), so BM25 scores run to several units.
    rows += [(f"other{i:03d}", at_cosine(0.0, rng), "kb", "garantie vol incendie", {}) for i in range(500)]
    insert(conn, rows)
    result = search(conn, "franchise sinistre", collections=["kb"], query_vector=Q,
                    config=SearchConfig(k=5, lexical_depth=50, semantic_depth=50, similarity_floor=0.5))
    ids = [h.id for h in result.hits]
    assert result.arms["semantic"].floor_cut == 49 and result.arms["semantic"].returned == 1  # 50 fetched
    assert "meaning" in ids[:2]
    hit = next(h for h in result.hits if h.id == "meaning")
    assert hit.ranks.get("semantic") == 1 and hit.ranks.get("lexical") is None
    # Naive fusion by raw score sum: BM25 scores (several units) bury a cosine (< 1).
    scores: dict[str, float] = {}
    for h in search(conn, "franchise sinistre", collections=["kb"], query_vector=Q,
                    config=SearchConfig(k=100, lexical_depth=60, semantic_depth=100)).hits:
        scores[h.id] = (h.scores.get("lexical") or 0) + (h.scores.get("semantic") or 0)
    naive_top5 = sorted(scores, key=lambda i: -scores[i])[:5]
    assert "meaning" not in naive_top5


def test_hit_cap_reports_underfill_with_counts(conn) -> None:
    rng = random.Random(13)
    rows = [(f"c{i:05d}", at_cosine(rng.uniform(0.5, 0.99), rng), "kb", "commun", {"groupe": "a"}) for i in range(1500)]
    rows += [(f"f{i:03d}", at_cosine(rng.uniform(-0.2, 0.0), rng), "kb", "loin", {"groupe": "b"}) for i in range(300)]
    insert(conn, rows)
    cfg = HNSW_ONLY.with_(k=20, semantic_depth=20, max_scan_tuples=100, exact_threshold=10)
    result = search(conn, "loin", collections=["kb"], conditions=[Condition("groupe", "eq", ("b",))],
                    query_vector=Q, config=cfg)
    sem = result.arms["semantic"]
    assert len(result.hits) < 20
    assert result.underfilled and sem.underfilled
    assert f"returned {len(result.hits)} of 20" in (result.underfill_reason or "")
    assert "scanned 100" in (result.underfill_reason or "") and "of 1800" in (result.underfill_reason or "")
    # With the default budget the same query is complete and says so.
    full = search(conn, "loin", collections=["kb"], conditions=[Condition("groupe", "eq", ("b",))],
                  query_vector=Q, config=cfg.with_(max_scan_tuples=20000))
    assert len(full.hits) == 20 and not full.underfilled
    # The naive post-filter comes back short and says nothing.
    assert len(naive_post_filter(conn, lambda c, m: m["groupe"] == "b", 20)) < 20


def test_filters_apply_in_the_lexical_arm_too(conn) -> None:
    rng = random.Random(17)
    insert(conn, [
        ("auto1", at_cosine(0.5, rng), "kb", "sinistre automobile", {"produit": "auto"}),
        ("hab1", at_cosine(0.1, rng), "kb", "sinistre habitation", {"produit": "habitation"}),
        ("other", at_cosine(0.9, rng), "kb2", "sinistre ailleurs", {"produit": "habitation"}),
    ])
    result = search(conn, "sinistre", collections=["kb"], conditions=[Condition("produit", "eq", ("habitation",))],
                    query_vector=Q, config=SearchConfig(k=5))
    assert [h.id for h in result.hits] == ["hab1"]
    assert result.hits[0].ranks.get("lexical") == 1 and result.hits[0].ranks.get("semantic") == 1


def test_planner_setting_does_not_outlive_the_vector_arm(migrated_db) -> None:
    """The HNSW strategy turns sorts off for its one statement; a caller inside its own transaction (Open
    WebUI's sessions are) must get its planner back for the rest of that transaction."""
    dsn = migrated_db()
    with psycopg.connect(dsn, autocommit=True) as setup:
        rng = random.Random(3)
        insert(setup, [(f"r{i:03d}", at_cosine(0.5, rng), "c", "texte", {}) for i in range(50)])
    with psycopg.connect(dsn) as caller:
        caller.execute("SELECT 1")  # the caller's transaction is open: search runs in savepoints inside it
        result = search(caller, "texte", collections=["c"], query_vector=Q, config=HNSW_ONLY.with_(exact_threshold=1))
        assert result.arms["semantic"].strategy == "hnsw" and len(result.hits) == HNSW_ONLY.k
        assert caller.execute("SELECT current_setting('enable_sort')").fetchone() == ("on",)


def test_underfilled_searches_are_counted(conn) -> None:
    from prometheus_client import REGISTRY

    def underfilled() -> float:
        return REGISTRY.get_sample_value("ragfr_search_underfilled_total") or 0.0

    rng = random.Random(13)
    rows = [(f"c{i:05d}", at_cosine(rng.uniform(0.5, 0.99), rng), "kb", "commun", {"groupe": "a"}) for i in range(1500)]
    rows += [(f"f{i:03d}", at_cosine(rng.uniform(-0.2, 0.0), rng), "kb", "loin", {"groupe": "b"}) for i in range(300)]
    insert(conn, rows)
    cfg = HNSW_ONLY.with_(k=20, semantic_depth=20, max_scan_tuples=100, exact_threshold=10)
    cond = [Condition("groupe", "eq", ("b",))]
    before = underfilled()
    assert search(conn, "loin", collections=["kb"], conditions=cond, query_vector=Q, config=cfg).underfilled
    assert underfilled() == before + 1
    full = search(conn, "loin", collections=["kb"], conditions=cond, query_vector=Q,
                  config=cfg.with_(max_scan_tuples=20000))
    assert not full.underfilled and underfilled() == before + 1
