"""The vector arm on the half-precision index: candidates from the halfvec graph, scores at float32; and
the cost rule that picks filter-first exact scoring or the graph walk."""

from __future__ import annotations

import random

import psycopg
import pytest
from tests.support.geometry import at_cosine, insert, literal, query_direction

from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.filters import Condition
from ragfr.retrieval.hybrid import search
from ragfr.retrieval.strategy import exact_threshold

Q = query_direction()
ROWS = 400
NEAR = 30


@pytest.fixture
def conn(migrated_db):
    with psycopg.connect(migrated_db(), autocommit=True) as c:
        rng = random.Random(21)
        # NEAR rows with cosines 1e-6 apart, far above the rest: closer than half precision resolves, so the
        # halfvec order and the float32 order of these rows differ (checked below); only the re-score gets
        # them right. The nearest has the highest id: ties broken by id list them in the wrong order.
        insert(c, [(f"r{i:03d}", at_cosine(0.9 - (NEAR - i) * 1e-6 if i < NEAR else rng.uniform(-0.5, 0.5), rng), "kb",
                    "texte", {"cls": "a" if i % 4 == 0 else "b"}) for i in range(ROWS)])
        yield c


def _exact(conn: psycopg.Connection, n: int, where: str = "true") -> list[tuple[str, float]]:  # type: ignore[type-arg]
    return [(r[0], float(r[1])) for r in conn.execute(
        f"SELECT id, 1 - (vector <=> %s::vector) AS s FROM document_chunk WHERE {where} ORDER BY s DESC, id LIMIT %s",
        (literal(Q), n))]


def _index_scans(conn: psycopg.Connection) -> int:  # type: ignore[type-arg]
    # This backend's counters reach the shared stats when it goes idle: force that, then read fresh ones.
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'idx_document_chunk_vector'"
                       ).fetchone()
    assert row is not None
    return int(row[0])


def test_halfvec_walk_then_full_precision_scores_equal_exact_search(conn) -> None:
    # exact_threshold=1 forces the walk; ef_search above the row count makes the walk exhaustive, so any
    # difference from exact search could only come from precision.
    config = SearchConfig(k=NEAR, lexical=False, semantic_depth=NEAR, exact_threshold=1, ef_search=ROWS + 100)
    before = _index_scans(conn)
    result = search(conn, "texte", collections=["kb"], query_vector=Q, config=config)
    assert result.settings["vector_index"] == "halfvec"
    assert result.arms["semantic"].strategy == "hnsw"
    assert _index_scans(conn) > before, "the walk must go through idx_document_chunk_vector"
    got = [(h.id, h.semantic_score) for h in result.hits]
    want = _exact(conn, NEAR)
    assert [i for i, _ in got] == [i for i, _ in want]
    for (_, s), (_, t) in zip(got, want, strict=True):
        assert s == pytest.approx(t, abs=1e-12)
    # Control: ranked by the halfvec distance itself, the same rows come in another order, so the test
    # above does see the re-score at work.
    half = [r[0] for r in conn.execute(
        "SELECT id FROM document_chunk ORDER BY vector::halfvec(1024) <=> %s::halfvec(1024), id LIMIT %s",
        (literal(Q), NEAR))]
    assert sorted(half) == sorted(i for i, _ in want) and half != [i for i, _ in want]


def test_filtered_walk_and_exact_scoring_agree(conn) -> None:
    cond = [Condition("cls", "eq", ("a",))]
    base = SearchConfig(k=10, lexical=False, semantic_depth=10, ef_search=ROWS + 100)
    walked = search(conn, "texte", collections=["kb"], conditions=cond, query_vector=Q,
                    config=base.with_(exact_threshold=1))
    scored = search(conn, "texte", collections=["kb"], conditions=cond, query_vector=Q,
                    config=base.with_(exact_threshold=1000))
    assert (walked.arms["semantic"].strategy, scored.arms["semantic"].strategy) == ("hnsw", "exact")
    assert scored.arms["semantic"].passing == ROWS // 4
    want = _exact(conn, 10, "vmetadata ->> 'cls' = 'a'")
    for result in (walked, scored):
        assert [(h.id, pytest.approx(h.semantic_score, abs=1e-12)) for h in result.hits] == want


@pytest.mark.parametrize(("indexed", "depth", "ef", "ratio", "expected"), [
    (0, 50, 100, 10.0, 1000),            # r * ef_search: a walk never visits fewer than ef_search
    (2_000, 50, 100, 10.0, 1000),        # sqrt(10 * 50 * 2000) = 1000: both terms meet
    (100_000, 50, 100, 10.0, 7071),      # 1 % of 100k is scored exactly, 10 % walks the graph
    (1_000_000, 50, 100, 10.0, 22360),
    (100, 50, 40, 0.01, 50),             # never below depth
])
def test_threshold_formula(indexed: int, depth: int, ef: int, ratio: float, expected: int) -> None:
    assert exact_threshold(indexed, depth, ef, ratio) == expected


def test_cost_rule_choice_at_the_boundary(conn) -> None:
    # r = 0.5, depth 10, ef_search 40, 400 indexed rows: max(0.5 * 40, sqrt(0.5 * 10 * 400)) = 44.7 -> 44.
    # A range filter: the planner cannot estimate it, so the capped count decides, exactly at the threshold.
    config = SearchConfig(k=10, lexical=False, semantic_depth=10, ef_search=40, exact_cost_ratio=0.5)
    assert exact_threshold(ROWS, 10, 40, 0.5) == 44
    conn.execute("UPDATE document_chunk SET vmetadata = vmetadata || jsonb_build_object('n', substr(id, 2)::int)")
    at = search(conn, "texte", collections=["kb"], conditions=[Condition("n", "lt", ("44",))],
                query_vector=Q, config=config)
    over = search(conn, "texte", collections=["kb"], conditions=[Condition("n", "lt", ("45",))],
                  query_vector=Q, config=config)
    assert (at.arms["semantic"].strategy, at.arms["semantic"].passing, at.arms["semantic"].threshold) == ("exact", 44, 44)
    assert (over.arms["semantic"].strategy, over.arms["semantic"].passing) == ("hnsw", None)
    assert at.arms["semantic"].estimated is None and over.arms["semantic"].estimated is None
    # Either way k rows come back when k rows pass, and none outside the filter.
    assert len(at.hits) == 10 and len(over.hits) == 10 and not at.underfilled and not over.underfilled
    assert {h.id for h in over.hits} <= {f"r{i:03d}" for i in range(45)}
    assert {h.id for h in at.hits} <= {f"r{i:03d}" for i in range(44)}


def test_planner_estimate_skips_the_count_and_a_wrong_one_falls_back_to_exact(conn) -> None:
    config = SearchConfig(k=10, lexical=False, semantic_depth=10, ef_search=40, exact_cost_ratio=0.5)
    conn.execute("ANALYZE document_chunk")
    broad = search(conn, "texte", collections=["kb"], conditions=[Condition("cls", "eq", ("b",))],
                   query_vector=Q, config=config)
    # 300 of 400 rows pass; the GIN statistics say about as much, far above the threshold (44): walk.
    sem = broad.arms["semantic"]
    assert sem.strategy == "hnsw" and sem.passing is None and sem.estimated is not None and sem.estimated > 44
    assert len(broad.hits) == 10 and all(h.metadata["cls"] == "b" for h in broad.hits)
    # Now only 3 rows are "a", but the statistics still say 100: the estimate sends the arm down the graph,
    # the walk comes back with 3 of 10, and the arm counts and scores exactly instead of reporting a shortage.
    conn.execute("UPDATE document_chunk SET vmetadata = jsonb_build_object('cls', 'b')"
                 " WHERE vmetadata ->> 'cls' = 'a' AND id > 'r011'")
    stale = search(conn, "texte", collections=["kb"], conditions=[Condition("cls", "eq", ("a",))],
                   query_vector=Q, config=config)
    sem = stale.arms["semantic"]
    assert sem.estimated is not None and sem.estimated > 44, "the statistics should still be stale here"
    assert (sem.strategy, sem.passing, stale.underfilled) == ("exact", 3, False)
    assert sorted(h.id for h in stale.hits) == ["r000", "r004", "r008"]


def test_unfiltered_small_collection_is_scored_exactly_large_one_walked(conn) -> None:
    config = SearchConfig(k=10, lexical=False, semantic_depth=10, ef_search=40, exact_cost_ratio=0.5)
    walked = search(conn, "texte", collections=["kb"], query_vector=Q, config=config)  # 400 rows > 44
    assert walked.arms["semantic"].strategy == "hnsw"
    exact = search(conn, "texte", collections=["kb"], query_vector=Q, config=config.with_(exact_cost_ratio=10.0))
    assert exact.arms["semantic"].strategy == "exact" and exact.arms["semantic"].passing == ROWS
    assert [h.id for h in exact.hits] == [i for i, _ in _exact(conn, 10)]
