"""The new space's index copies the live one's shape: half precision (migration 0011's default) at the new
dimension, or full precision when the database kept it; anything else is refused, not guessed at."""

from __future__ import annotations

import psycopg
import pytest

from ragfr.embmigrate import columns, indexing, names
from ragfr.errors import DatabaseError
from ragfr.vector_index import shape
from ragfr.vector_index.upgrade import migrate


def _build_next(dsn: str) -> shape.Index:
    with psycopg.connect(dsn, autocommit=True) as conn:
        with conn.transaction():
            columns.add_next(conn, 384)
        live = shape.index(conn, names.INDEX)
        assert live is not None and live.column == names.VECTOR
        assert indexing.ensure_index(conn, live, names.INDEX_NEXT, names.VECTOR_NEXT, "64MB")
        built = shape.index(conn, names.INDEX_NEXT)
        assert built is not None and built.valid and built.column == names.VECTOR_NEXT
        return built


def test_half_precision_index_is_copied_at_the_new_dimension(migrated_db) -> None:
    built = _build_next(migrated_db(dims=512))
    assert built.expression and built.precision == "halfvec"
    assert "USING hnsw (((vector_next)::halfvec(384)) halfvec_cosine_ops) WITH (m='16', ef_construction='64')" in (
        built.definition)


def test_full_precision_index_stays_full_precision(empty_db) -> None:
    migrate(empty_db, 512, vector_index="vector")
    built = _build_next(empty_db)
    assert not built.expression and built.precision == "vector"
    assert "USING hnsw (vector_next vector_cosine_ops) WITH (m='16', ef_construction='64')" in built.definition


def test_unknown_expression_index_is_refused(migrated_db) -> None:
    with psycopg.connect(migrated_db(dims=512), autocommit=True) as conn:
        conn.execute("DROP INDEX idx_document_chunk_vector")
        conn.execute("CREATE INDEX idx_document_chunk_vector ON document_chunk USING hnsw "
                     "((l2_normalize(vector)::vector(512)) vector_cosine_ops)")
        live = shape.index(conn, names.INDEX)
        assert live is not None and live.expression and live.column == names.VECTOR
        with pytest.raises(DatabaseError, match="expression ragfr does not know"):
            shape.create_index_statement(live, names.INDEX_NEXT, names.VECTOR_NEXT, concurrently=True, dims=384)
