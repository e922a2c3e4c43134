"""Declared filters keep their own graph through an embedding migration: the new space gets a copy of each
partial index, renamed in at the switch (searches with that filter walk it at once), renamed back by a
rollback, and the old one goes with the old column at finalize."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
from tests.support.embmigrate import TARGET, snapshot

from ragfr.embed import load_embedder
from ragfr.embmigrate import runner
from ragfr.embmigrate.finalize import finalize
from ragfr.embmigrate.options import MigrateOptions
from ragfr.embmigrate.rollback import rollback
from ragfr.filters.grammar import Condition
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.hybrid import search
from ragfr.vector_index import graphs

NAME = graphs.index_name("type", "contrat")
PREDICATE = """WHERE (vmetadata @> '{"type": "contrat"}'::jsonb)"""


def _declared(source_db: Callable[[int], str]) -> str:
    dsn = source_db(24)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE document_chunk SET vmetadata = '{\"type\": \"contrat\"}' WHERE id <= 'chunk-0011'")
        assert graphs.declare(conn, "type", "contrat")
        assert graphs.sync(conn).built == [NAME]
    return dsn


def _opts(dsn: str, **kw: object) -> MigrateOptions:
    return MigrateOptions(dsn=dsn, to=TARGET, progress=False, **kw)  # type: ignore[arg-type]


def test_the_new_space_has_the_declared_graphs_from_the_switch_on(source_db) -> None:
    dsn = _declared(source_db)
    messages: list[str] = []
    assert runner.migrate(_opts(dsn), messages.append) == 0
    assert any("1 declared filter index(es)" in m for m in messages), messages
    indexes = snapshot(dsn)["indexes"]
    assert "((vector)::halfvec(384)) halfvec_cosine_ops)" in indexes[NAME] and PREDICATE in indexes[NAME]
    assert "((vector_prev)::halfvec(512))" in indexes[NAME + "_prev"] and PREDICATE in indexes[NAME + "_prev"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert [d.state for d in graphs.listing(conn)] == ["ready"]
        (query,) = load_embedder(TARGET, cache=False).embed_queries(["contrat d'assurance"])
        # 12 rows pass; depth 6 with exact_threshold=1 forces the walk on 24 rows (see test_filter_index.py)
        result = search(conn, "contrat", collections=["kb-1"], query_vector=query,
                        conditions=(Condition("type", "eq", ("contrat",)),),
                        config=SearchConfig(k=6, lexical=False, semantic_depth=6, exact_threshold=1))
        assert result.arms["semantic"].filter_index == NAME and len(result.hits) == 6
        assert graphs.sync(conn).built == []  # nothing left for sync to do
    assert finalize(dsn, print) == 0
    indexes = snapshot(dsn)["indexes"]
    assert NAME + "_prev" not in indexes and "(vector)::halfvec(384)" in indexes[NAME]


def test_a_rollback_gives_the_old_space_its_graphs_back(source_db) -> None:
    dsn = _declared(source_db)
    before = snapshot(dsn)["indexes"]
    assert runner.migrate(_opts(dsn), print) == 0
    assert rollback(dsn, print, progress=False) == 0
    assert snapshot(dsn)["indexes"] == before


def test_sync_leaves_the_indexes_alone_while_a_migration_is_open(source_db) -> None:
    dsn = _declared(source_db)
    assert runner.migrate(_opts(dsn, no_switch=True), print) == 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert graphs.declare(conn, "type", "notice")
        report = graphs.sync(conn)
        assert report.built == [] and report.skipped and "is open" in report.skipped
        assert [d.state for d in graphs.listing(conn)] == ["ready", "missing"]
    assert rollback(dsn, print, progress=False) == 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert graphs.sync(conn).built == [graphs.index_name("type", "notice")]


def test_a_large_collections_own_graph_moves_to_the_new_space(source_db) -> None:
    """A collection's own graph (issue 39, migration 0016) is a declaration like a filter's: the migration
    builds it on the new column, on the normalized vectors as sync does, and the switch renames it in. The
    limit is lowered to 10 chunks (sync's and the search's, the one setting) so the fixture's 24 count as a
    large collection; exact_threshold=1 forces the walk on 24 rows (see test_filter_index.py)."""
    dsn = source_db(24)
    graph = graphs.index_name(graphs.COLLECTION_KEY, "kb-1", on_collection=True)
    with psycopg.connect(dsn, autocommit=True) as conn:
        report = graphs.sync(conn, collection_rows=10)
        assert report.collections_declared == ["kb-1"] and report.built == [graph]
    assert runner.migrate(_opts(dsn), print) == 0
    indexes = snapshot(dsn)["indexes"]
    assert "((l2_normalize(vector))::halfvec(384)) halfvec_cosine_ops)" in indexes[graph], indexes[graph]
    assert "WHERE (collection_name = 'kb-1'::text)" in indexes[graph]
    assert "(l2_normalize(vector_prev))::halfvec(512)" in indexes[graph + "_prev"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        (query,) = load_embedder(TARGET, cache=False).embed_queries(["contrat d'assurance"])
        result = search(conn, "contrat", collections=["kb-1"], query_vector=query,
                        config=SearchConfig(k=6, lexical=False, semantic_depth=6, exact_threshold=1,
                                            collection_exact_rows=10))
        arm = result.arms["semantic"]
        assert (arm.scope, arm.filter_index, len(result.hits)) == ("collection graph", graph, 6)
        assert graphs.sync(conn, collection_rows=10).built == []
    assert finalize(dsn, print) == 0
    assert graph + "_prev" not in snapshot(dsn)["indexes"]
