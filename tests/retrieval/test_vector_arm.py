"""The vector arm on the half-precision index: candidates from the halfvec graph, scores at float32; and
the cost rule that picks filter-first exact scoring or the graph walk.

The cost rule and the walk serve knowledge bases above SearchConfig.collection_exact_rows (10,000 chunks),
below which every row is scored exactly (tests/retrieval/test_collection_isolation.py). These fixtures hold
a few hundred rows, so the tests of the rule and the walk turn the collection rule off (WALK) to stand
for such a knowledge base: loading 10,000 rows per test would test nothing more."""

from __future__ import annotations

import random

import numpy as np
import psycopg
import pytest
from tests.support.geometry import at_cosine, insert, literal, query_direction

from ragfr.errors import ConfigError
from ragfr.filters.grammar import Condition
from ragfr.retrieval.config import SearchConfig, ef_search_for, parse_ef_search
from ragfr.retrieval.hybrid import search
from ragfr.retrieval.semantic import vector_literal
from ragfr.retrieval.strategy import exact_threshold

Q = query_direction()
ROWS = 400
NEAR = 30
WALK = {"collection_exact_rows": 0}


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
    got = [(h.id, h.scores.get("semantic")) for h in result.hits]
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
        assert [(h.id, pytest.approx(h.scores.get("semantic"), abs=1e-12)) for h in result.hits] == want


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
    config = SearchConfig(k=10, lexical=False, semantic_depth=10, ef_search=40, exact_cost_ratio=0.5, **WALK)
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
    config = SearchConfig(k=10, lexical=False, semantic_depth=10, ef_search=40, exact_cost_ratio=0.5, **WALK)
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
    config = SearchConfig(k=10, lexical=False, semantic_depth=10, ef_search=40, exact_cost_ratio=0.5, **WALK)
    walked = search(conn, "texte", collections=["kb"], query_vector=Q, config=config)  # 400 rows > 44
    assert walked.arms["semantic"].strategy == "hnsw"
    exact = search(conn, "texte", collections=["kb"], query_vector=Q, config=config.with_(exact_cost_ratio=10.0))
    assert exact.arms["semantic"].strategy == "exact" and exact.arms["semantic"].passing == ROWS
    assert [h.id for h in exact.hits] == [i for i, _ in _exact(conn, 10)]


def test_a_walk_no_row_can_fail_skips_the_iterative_scan_and_finds_the_same_rows(conn) -> None:
    # depth 40 of 400 rows, ef_search 60: the walk is approximate, so "the same rows" is a real comparison.
    # A condition every row passes makes the arm walk iteratively, as any filtered walk does.
    config = SearchConfig(k=40, lexical=False, semantic_depth=40, ef_search=60, exact_cost_ratio=0.1, **WALK)
    whole = search(conn, "texte", collections=["kb"], query_vector=Q, config=config)
    every = search(conn, "texte", collections=["kb"], conditions=[Condition("cls", "in", ("a", "b"))],
                   query_vector=Q, config=config)
    assert (whole.arms["semantic"].strategy, every.arms["semantic"].strategy) == ("hnsw", "hnsw")
    assert (whole.arms["semantic"].iterative_scan, every.arms["semantic"].iterative_scan) == ("off", "relaxed_order")
    assert [(h.id, h.scores.get("semantic")) for h in whole.hits] == [(h.id, h.scores.get("semantic")) for h in every.hits]
    assert len(whole.hits) == 40
    # The transaction's setting is back to relaxed_order after the walk (SET LOCAL, restored).
    with conn.transaction():
        search(conn, "texte", collections=["kb"], query_vector=Q, config=config)
        assert conn.execute("SELECT current_setting('hnsw.iterative_scan')").fetchone() == ("relaxed_order",)
    # ef_search below the depth: the first batch could not hold `depth` rows, so the walk iterates.
    low = search(conn, "texte", collections=["kb"], query_vector=Q, config=config.with_(ef_search=20))
    assert low.arms["semantic"].iterative_scan == "relaxed_order" and len(low.hits) == 40


def test_searching_part_of_the_graph_walks_iteratively_and_a_short_first_batch_walks_again(conn) -> None:
    rng = random.Random(5)
    # A second collection whose rows are all nearer the query than any of kb's but the 30 NEAR ones.
    insert(conn, [(f"z{i:03d}", at_cosine(rng.uniform(0.6, 0.8), rng), "other", "texte", {}) for i in range(200)])
    config = SearchConfig(k=40, lexical=False, semantic_depth=40, ef_search=60, exact_cost_ratio=0.1, **WALK)
    part = search(conn, "texte", collections=["kb"], query_vector=Q, config=config)
    assert part.arms["semantic"].iterative_scan == "relaxed_order"
    assert len(part.hits) == 40 and all(h.id.startswith("r") for h in part.hits)
    # Statistics that (wrongly) say kb is the whole graph: the arm tries the single batch, which comes back
    # with fewer than 40 of kb's rows, and walks again iteratively: the same answer, nothing short. This
    # edits the collection statistics inside a rolled-back transaction to fix that geometry; the product
    # keeps them exact (the BM25 triggers).
    with conn.transaction(force_rollback=True):
        conn.execute("DELETE FROM ragfr_collection_stats WHERE collection_name = 'other'")
        stale = search(conn, "texte", collections=["kb"], query_vector=Q, config=config)
    assert stale.arms["semantic"].iterative_scan == "relaxed_order"
    assert [h.id for h in stale.hits] == [h.id for h in part.hits] and not stale.underfilled


def test_ef_search_rule_by_graph_size() -> None:
    assert (ef_search_for(0), ef_search_for(300_000), ef_search_for(300_001), ef_search_for(10**7)) == (
        100, 100, 200, 200)
    assert SearchConfig().ef_search is None and SearchConfig().ef_search_at(1_000_000) == 200
    assert SearchConfig(ef_search=64).ef_search_at(1_000_000) == 64
    assert (parse_ef_search("auto"), parse_ef_search(" AUTO "), parse_ef_search("150"), parse_ef_search(None)) == (
        None, None, 150, None)
    for bad in ("0", "1001", "cent", "", "1.5"):
        with pytest.raises(ConfigError, match="ef_search must be 'auto' or an integer from 1 to 1000"):
            parse_ef_search(bad)
    for value in (0, 1001, True, "100"):
        with pytest.raises(ConfigError, match="ef_search must be None"):
            SearchConfig(ef_search=value)  # type: ignore[arg-type]


def test_the_size_rule_sets_ef_search_from_the_graph_and_logs_it(conn) -> None:
    config = SearchConfig(k=10, lexical=False, semantic_depth=10)
    small = search(conn, "texte", collections=["kb"], query_vector=Q, config=config)
    assert (small.settings["ef_search"], small.settings["ef_search_rule"]) == (100, "graph size")
    # The graph's size comes from the collection statistics; claiming 400k rows (in a rolled-back
    # transaction: a test cannot load 400k chunks) must move the walk to the upper tier.
    with conn.transaction(force_rollback=True):
        conn.execute("UPDATE ragfr_collection_stats SET n_docs = 400000 WHERE collection_name = 'kb'")
        large = search(conn, "texte", collections=["kb"], query_vector=Q, config=config)
    assert (large.settings["ef_search"], large.settings["ef_search_rule"]) == (200, "graph size")
    pinned = search(conn, "texte", collections=["kb"], query_vector=Q, config=config.with_(ef_search=64))
    assert (pinned.settings["ef_search"], pinned.settings["ef_search_rule"]) == (64, "pinned")


def test_the_query_literal_gives_the_server_the_same_values_as_repr(conn) -> None:
    rng = random.Random(3)
    model_output = np.asarray([rng.gauss(0, 0.05) for _ in range(1024)], dtype=np.float32).tolist()
    doubles = [rng.uniform(-1, 1) for _ in range(1024)]  # full double precision: rounded to float4 either way
    edges = [0.0, -0.0, 1e-40, -1.4e-45, 3.4028234663852886e38, 1.1754943508222875e-38, 0.1, 1 / 3]
    for vector in (model_output, doubles, edges):
        written = vector_literal(vector)
        as_repr = "[" + ",".join(map(repr, vector)) + "]"
        assert len(written) <= len(as_repr)
        assert conn.execute("SELECT %s::vector::text = %s::vector::text", (written, as_repr)).fetchone() == (True,)
        if max(map(abs, vector)) <= 65504:  # what a halfvec holds: the walk's cast of the same literal
            assert conn.execute("SELECT %s::halfvec::text = %s::halfvec::text", (written, as_repr)).fetchone() == (
                True,)
