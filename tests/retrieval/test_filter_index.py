"""Declared filters (`ragfr filter-index`): their partial HNSW index is built, walked by the searches with
that equality, sized into the cost rule, kept in the live index's precision, and dropped when forgotten.

Every search here that must walk (the corpus has 400 rows, where the cost rule scores filters exactly)
pins `exact_threshold=1`, as the other small-corpus vector tests do: the rule itself is checked at its own
value in test_the_cost_rule_sizes_the_walk_by_the_declared_graph."""

from __future__ import annotations

import json
import random

import psycopg
import pytest
from tests.support.geometry import at_cosine, insert, literal, query_direction

from ragfr.cli import main
from ragfr.errors import ConfigError
from ragfr.filters.grammar import Condition
from ragfr.retrieval.config import SearchConfig, ef_search_for
from ragfr.retrieval.hybrid import search
from ragfr.retrieval.strategy import exact_threshold
from ragfr.vector_index import graphs
from ragfr.vector_index.upgrade import migrate

Q = query_direction()
ROWS = 400
CONTRAT = graphs.index_name("type", "contrat")


@pytest.fixture
def dsn(migrated_db) -> str:
    dsn = migrated_db()
    with psycopg.connect(dsn, autocommit=True) as c:
        rng = random.Random(5)
        # a quarter "contrat"; a year written as a JSON number on some rows and as a string on others
        insert(c, [(f"r{i:03d}", at_cosine(rng.uniform(-0.6, 0.95), rng), "kb", "texte",
                    {"type": "contrat" if i % 4 == 0 else "notice",
                     "annee": (2023 if i % 2 else "2023") if i % 5 == 0 else 2020}) for i in range(ROWS)])
    return dsn


def _cli(dsn: str, *args: str) -> int:
    return main(["filter-index", *args, "--dsn", dsn])


def _scans(conn: psycopg.Connection, index: str) -> int:  # type: ignore[type-arg]
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s", (index,)).fetchone()
    return int(row[0]) if row else -1


def _exact(conn: psycopg.Connection, where: str, n: int) -> list[tuple[str, float]]:  # type: ignore[type-arg]
    return [(r[0], round(float(r[1]), 6)) for r in conn.execute(
        f"SELECT id, 1 - (vector <=> %s::vector) AS s FROM document_chunk WHERE {where} ORDER BY s DESC, id LIMIT %s",
        (literal(Q), n))]


def _listed(dsn: str, capsys) -> list[dict]:
    capsys.readouterr()
    assert _cli(dsn, "list", "--json") == 0
    return json.loads(capsys.readouterr().out)


def test_a_declared_filter_is_walked_on_its_own_graph(dsn, capsys) -> None:
    assert _cli(dsn, "add", "type=contrat") == 0
    assert "1 built" in capsys.readouterr().out
    (row,) = _listed(dsn, capsys)
    assert (row["key"], row["value"], row["index_name"], row["state"], row["rows"]) == (
        "type", "contrat", CONTRAT, "ready", ROWS // 4)
    config = SearchConfig(k=20, lexical=False, semantic_depth=20, exact_threshold=1)
    with psycopg.connect(dsn, autocommit=True) as conn:
        shared, own = _scans(conn, "idx_document_chunk_vector"), _scans(conn, CONTRAT)
        result = search(conn, "texte", collections=["kb"], query_vector=Q, config=config,
                        conditions=(Condition("type", "eq", ("contrat",)),))
        arm = result.arms["semantic"]
        assert (arm.strategy, arm.filter_index, arm.filter_index_rows) == ("hnsw", CONTRAT, ROWS // 4)
        # one condition, its own graph, every collection: no row of the walk can fail, one batch
        assert arm.iterative_scan == "off" and not result.underfilled
        # ef_search is the whole graph's (the size rule's 100 here), not one for the smaller graph
        assert result.settings["ef_search"] == ef_search_for(ROWS) == 100
        assert _scans(conn, CONTRAT) == own + 1 and _scans(conn, "idx_document_chunk_vector") == shared
        # ef_search 100 over a 100-node graph visits it all: the exact answer
        got = [(h.id, round(h.scores.get("semantic") or 0, 6)) for h in result.hits]
        assert got == _exact(conn, "vmetadata->>'type' = 'contrat'", 20)

        # with a second condition the walk iterates on the same graph (rows of it may fail the other one)
        result = search(conn, "texte", collections=["kb"], query_vector=Q, config=config,
                        conditions=(Condition("type", "eq", ("contrat",)), Condition("annee", "eq", ("2020",))))
        arm = result.arms["semantic"]
        assert (arm.filter_index, arm.iterative_scan) == (CONTRAT, "relaxed_order")
        assert _scans(conn, CONTRAT) == own + 2
        got = [(h.id, round(h.scores.get("semantic") or 0, 6)) for h in result.hits]
        assert got == _exact(conn, "vmetadata->>'type' = 'contrat' AND vmetadata->>'annee' = '2020'", 20)

        # an undeclared filter walks the shared graph; a pinned ef_search stays pinned
        result = search(conn, "texte", collections=["kb"], query_vector=Q,
                        config=SearchConfig(k=20, lexical=False, semantic_depth=20, exact_threshold=1, ef_search=64),
                        conditions=(Condition("type", "eq", ("notice",)),))
        assert result.arms["semantic"].filter_index is None
        assert result.settings["ef_search"] == 64
        assert _scans(conn, "idx_document_chunk_vector") == shared + 1


def test_a_number_like_value_matches_numbers_and_strings(dsn) -> None:
    """`annee=2023` accepts {"annee": 2023} and {"annee": "2023"}: the index's predicate holds both
    containment tests, in the order the search writes them, so the planner still proves it applies."""
    assert _cli(dsn, "add", "annee=2023") == 0
    name = graphs.index_name("annee", "2023")
    config = SearchConfig(k=40, lexical=False, semantic_depth=40, exact_threshold=1)  # 80 rows pass: a walk
    with psycopg.connect(dsn, autocommit=True) as conn:
        before = _scans(conn, name)
        result = search(conn, "texte", collections=["kb"], query_vector=Q, config=config,
                        conditions=(Condition("annee", "eq", ("2023",)),))
        arm = result.arms["semantic"]
        assert (arm.strategy, arm.filter_index) == ("hnsw", name) and _scans(conn, name) == before + 1
        assert {type(h.metadata["annee"]) for h in result.hits} == {int, str}
        got = [(h.id, round(h.scores.get("semantic") or 0, 6)) for h in result.hits]
        assert got == _exact(conn, "vmetadata->>'annee' = '2023'", 40)


def test_the_cost_rule_sizes_the_walk_by_the_declared_graph(dsn) -> None:
    assert _cli(dsn, "add", "type=contrat") == 0
    # The cost rule serves knowledge bases above collection_exact_rows; this one stands for such a base.
    config = SearchConfig(k=10, lexical=False, semantic_depth=10, collection_exact_rows=0)
    with psycopg.connect(dsn, autocommit=True) as conn:
        result = search(conn, "texte", collections=["kb"], query_vector=Q, config=config,
                        conditions=(Condition("type", "eq", ("contrat",)),))
    arm = result.arms["semantic"]
    ef = result.settings["ef_search"]
    assert arm.threshold == exact_threshold(ROWS // 4, 10, ef, config.exact_cost_ratio)
    assert arm.strategy == "exact" and arm.passing == ROWS // 4  # 100 rows: scoring them beats any walk


def test_drop_removes_the_index_and_sync_converges(dsn, capsys) -> None:
    assert _cli(dsn, "add", "type=contrat", "annee=2023") == 0
    assert _cli(dsn, "add", "type=contrat") == 0  # declared twice: nothing built again
    assert "0 built, 0 dropped, 2 already ready" in capsys.readouterr().out
    assert _cli(dsn, "drop", "type=contrat") == 0
    assert [r["key"] for r in _listed(dsn, capsys)] == ["annee"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass(%s)", (CONTRAT,)).fetchone() == (None,)
        # an index left invalid by an interrupted build is rebuilt by sync
        annee = graphs.index_name("annee", "2023")
        conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(%s)", (annee,))
    assert [r["state"] for r in _listed(dsn, capsys)] == ["invalid"]
    assert _cli(dsn, "sync") == 0
    assert [r["state"] for r in _listed(dsn, capsys)] == ["ready"]


def test_the_indexes_follow_the_shared_index_precision(dsn, capsys) -> None:
    assert _cli(dsn, "add", "type=contrat") == 0
    migrate(dsn, vector_index="vector")  # the shared index rebuilt at full precision, then the declared ones
    with psycopg.connect(dsn, autocommit=True) as conn:
        (definition,) = conn.execute("SELECT pg_get_indexdef(to_regclass(%s))", (CONTRAT,)).fetchone()
    assert "USING hnsw (vector vector_cosine_ops)" in definition and "WHERE (vmetadata @>" in definition
    assert [r["state"] for r in _listed(dsn, capsys)] == ["ready"]


@pytest.mark.parametrize(("text", "message"), [
    ("type=a|b", "one equality"),
    ("annee>=2020", "one equality"),
    ('liste="[1]"', "starting with \\["),
    ("type", "no operator"),
])
def test_what_cannot_have_its_own_graph_is_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        graphs.parse_declaration(text)


def test_a_database_without_the_schema_is_one_line(pg_dsn, capsys) -> None:
    assert main(["filter-index", "list", "--dsn", pg_dsn]) == 2  # the cluster's `postgres` database: no ragfr schema
    assert "run `ragfr migrate` first" in capsys.readouterr().err
