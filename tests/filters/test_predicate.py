"""The compiled filter predicate against its definition, `vmetadata ->> key` compared as text, on every
kind of JSON value a row can hold; and the index that makes equality filters cheap (migrations/0008)."""

from __future__ import annotations

import random

import psycopg
import pytest
from tests.support.geometry import at_cosine, insert, literal

from ragfr.filters.grammar import Condition
from ragfr.filters.predicate import Filters

VALUES = ["5", 5, 5.0, 5.5, "5.5", -3, "007", 7, True, "true", False, None, [1, 2], {"a": 1}, "[1, 2]",
          "contrat", "Contrat", "", " 5", "5\n", "١٢"]
ASKED = ["5", "5.5", "-3", "007", "7", "true", "false", "null", "[1, 2]", '{"a": 1}', "contrat", "", " 5", "5\n",
         "١٢", "1e1"]


@pytest.fixture
def conn(migrated_db):
    rng = random.Random(5)
    with psycopg.connect(migrated_db(dims=1024), autocommit=True) as c:
        rows = [(f"v{i:02d}", at_cosine(0.5, rng), "c", "texte", {"k": v}) for i, v in enumerate(VALUES)]
        rows.append(("missing", at_cosine(0.5, rng), "c", "texte", {"other": "5"}))
        insert(c, rows)
        yield c


def _ids(conn: psycopg.Connection, where: psycopg.sql.Composable, params: list[object]) -> set[str]:  # type: ignore[type-arg]
    query = psycopg.sql.SQL("SELECT d.id FROM document_chunk d WHERE {}").format(where)
    return {r[0] for r in conn.execute(query, params).fetchall()}


@pytest.mark.parametrize("asked", ASKED)
def test_equality_keeps_its_text_meaning(conn, asked: str) -> None:
    predicate, params = Filters(("c",), (Condition("k", "eq", (asked,)),)).predicate("d")
    expected = _ids(conn, psycopg.sql.SQL("d.vmetadata ->> %s = %s"), ["k", asked])
    assert _ids(conn, predicate, params) == expected


@pytest.mark.parametrize("asked", [("5", "true"), ("contrat", "[1, 2]"), ("5.5", "007", "false")])
def test_any_of_keeps_its_text_meaning(conn, asked: tuple[str, ...]) -> None:
    predicate, params = Filters(("c",), (Condition("k", "in", asked),)).predicate("d")
    expected = _ids(conn, psycopg.sql.SQL("d.vmetadata ->> %s = ANY(%s)"), ["k", list(asked)])
    assert _ids(conn, predicate, params) == expected and expected


def test_numbers_and_booleans_match_their_text(conn) -> None:
    """The point of comparing as text: `page=5` finds {"page": 5} as well as {"page": "5"}."""
    predicate, params = Filters(("c",), (Condition("k", "eq", ("5",)),)).predicate("d")
    assert _ids(conn, predicate, params) == {"v00", "v01"}  # "5" and 5; 5.0 prints as "5.0"
    predicate, params = Filters(("c",), (Condition("k", "eq", ("true",)),)).predicate("d")
    assert _ids(conn, predicate, params) == {"v08", "v09"}


def test_equality_filters_use_the_metadata_index(conn) -> None:
    """In a collection of 20,000 chunks of realistic size (780 characters) the planner reaches the few
    matching rows through the GIN index instead of reading the collection, as every filtered query did
    before migrations/0008."""
    with conn.transaction():
        # Filler rows need only their size: skipping the French analysis triggers saves ~50 s of folding.
        conn.execute("ALTER TABLE document_chunk DISABLE TRIGGER USER")
        conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata)"
                     " SELECT 'f' || i, %s::vector, 'c', repeat('texte ', 130),"
                     " jsonb_build_object('k', 'autre' || i %% 50, 'n', i) FROM generate_series(1, 20000) i",
                     (literal(at_cosine(0.5, random.Random(6))),))
        conn.execute("ALTER TABLE document_chunk ENABLE TRIGGER USER")
    conn.execute("ANALYZE document_chunk")
    for cond in (Condition("k", "eq", ("contrat",)), Condition("k", "in", ("5", "true"))):
        predicate, params = Filters(("c",), (cond,), embedding_model="ollama:bge-m3").predicate("d")
        plan = "\n".join(r[0] for r in conn.execute(
            psycopg.sql.SQL("EXPLAIN SELECT d.id FROM document_chunk d WHERE {}").format(predicate), params))
        assert "idx_document_chunk_vmetadata" in plan, plan
