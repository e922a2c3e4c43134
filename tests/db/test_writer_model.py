"""Migration 0009: the database refuses a vector whose writer states another model than the active space's,
and a vector written without a model by a transaction that began before the space changed."""

from __future__ import annotations

import psycopg
import pytest
from tests.conftest import MigratedDb

SPACE = "ollama:test-model"
DIMS = 3


def _insert(conn: psycopg.Connection, chunk_id: str, model: str | None = None) -> None:  # type: ignore[type-arg]
    conn.execute(
        "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata, embedding_model)"
        " VALUES (%s, '[1,0,0]', 'c', 'un texte', '{}', %s)", (chunk_id, model),
    )


def _label(dsn: str, chunk_id: str) -> str | None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT embedding_model FROM document_chunk WHERE id = %s", (chunk_id,)).fetchone()
    return None if row is None else row[0]


@pytest.fixture
def dsn(migrated_db: MigratedDb) -> str:
    return migrated_db(DIMS, SPACE)


def test_a_label_from_another_model_is_refused_naming_both(dsn: str) -> None:
    with psycopg.connect(dsn) as conn, pytest.raises(psycopg.errors.CheckViolation) as err:
        _insert(conn, "a", "ollama:bge-m3")
    assert "vector from model ollama:bge-m3 refused: the active embedding space is ollama:test-model" in str(err.value)
    assert _label(dsn, "a") is None


def test_a_session_naming_another_model_is_refused(dsn: str) -> None:
    # How Open WebUI names its model: options=-c ragfr.writer_model=... in its database URL.
    with psycopg.connect(dsn, options="-c ragfr.writer_model=ollama:bge-m3") as conn:
        with pytest.raises(psycopg.errors.CheckViolation, match="vector from model ollama:bge-m3 refused"):
            _insert(conn, "b")
    with psycopg.connect(dsn, options=f"-c ragfr.writer_model={SPACE}") as conn:
        _insert(conn, "b")
    assert _label(dsn, "b") == SPACE


def test_unnamed_writer_is_labelled_when_the_space_did_not_change(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        _insert(conn, "c")
    assert _label(dsn, "c") == SPACE


def test_unnamed_writer_whose_transaction_predates_a_switch_is_refused(dsn: str) -> None:
    with psycopg.connect(dsn) as writer, psycopg.connect(dsn, autocommit=True) as switch:
        writer.execute("SELECT 1")  # the writer's transaction begins (and would embed with the old model)
        switch.execute("UPDATE ragfr_embedding_space SET model = 'ollama:other', updated_at = clock_timestamp()")
        with pytest.raises(psycopg.errors.CheckViolation, match="changed to ollama:other while this transaction ran"):
            _insert(writer, "d")
    with psycopg.connect(dsn) as later:  # a transaction that begins after the switch is fine
        _insert(later, "d")
    assert _label(dsn, "d") == "ollama:other"


def test_edits_that_keep_the_vector_are_not_checked(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        _insert(conn, "e", SPACE)
    with psycopg.connect(dsn, options="-c ragfr.writer_model=ollama:bge-m3") as stale:
        stale.execute("UPDATE document_chunk SET vmetadata = '{\"k\": 1}', text = 'autre texte' WHERE id = 'e'")
    assert _label(dsn, "e") == SPACE
