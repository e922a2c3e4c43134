"""The exact scan reads a collection by the collection index however many searches its connection ran before
(the Open WebUI adapter's pooled connections search every knowledge base in turn)."""

from __future__ import annotations

import psycopg

from ragfr.filters.predicate import Filters
from ragfr.vector_index import scan

DIMS = 8


def _fill(conn: psycopg.Connection, collection: str, rows: int) -> None:  # type: ignore[type-arg]
    conn.execute(
        "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata)"
        " SELECT %s || i, array_fill((i %% 7 + 1)::real, ARRAY[%s])::vector, %s, 'texte', '{}'::jsonb"
        " FROM generate_series(1, %s) i",
        (collection, DIMS, collection, rows),
    )


def test_a_small_collection_is_read_by_its_index_after_many_searches_of_a_large_one(migrated_db) -> None:
    dsn = migrated_db(dims=DIMS, model="ollama:test-double")
    with psycopg.connect(dsn, autocommit=True) as conn:
        _fill(conn, "large", 20_000)
        _fill(conn, "small", 20)
        conn.execute("ANALYZE document_chunk")
        literal = "[" + ",".join(["1"] * DIMS) + "]"
        for _ in range(12):  # past psycopg's prepare threshold (5) and PostgreSQL's custom-plan trials (5)
            passing, _rows = scan.exact(conn, Filters(collections=("large",)), literal, 30_000, 10)
            assert passing == 20_000
        passing, rows = scan.exact(conn, Filters(collections=("small",)), literal, 30_000, 10)
        assert passing == 20 and len(rows) == 10
        # No generic plan of the statement was kept on this connection for the next collection to reuse.
        kept = conn.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%%passing AS MATERIALIZED%%'"
        ).fetchone()
        assert kept == (0,)
