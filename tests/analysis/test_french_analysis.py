"""Python's French analysis must produce exactly the lexemes PostgreSQL stores (ragfr_to_tsvector).

If they differed, a query term analysed in Python would never meet the document lexeme analysed in SQL
and the lexical arm would silently miss. Compared token by token AND as whole-text lexeme sequences.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest
from tests.support.paths import PIAF_JSON, REPO

from ragfr.analysis import folding, french

WORDS = Path(__file__).parent / "data" / "french_words.txt"


def _pg_sequences(conn: psycopg.Connection, texts: list[str]) -> list[list[str]]:  # type: ignore[type-arg]
    rows = conn.execute(
        "SELECT (SELECT coalesce(array_agg(u.lexeme ORDER BY p), '{}') FROM unnest(ragfr_to_tsvector(x)) u,"
        " unnest(u.positions) p) FROM unnest(%s::text[]) WITH ORDINALITY AS s(x, i) ORDER BY i",
        (texts,),
    ).fetchall()
    return [list(r[0]) for r in rows]


def _assert_identical(dsn: str, texts: list[str]) -> None:
    with psycopg.connect(dsn) as conn:
        token_list = sorted({t for x in texts for t in french.tokens(folding.fold(x))})
        pg_tokens = _pg_sequences(conn, token_list)
        bad = [(t, pg, french.analyze(t)) for t, pg in zip(token_list, pg_tokens, strict=True) if pg != french.analyze(t)]
        assert not bad, f"{len(bad)} tokens analysed differently (token, postgres, python): {bad[:20]}"
        pg_texts = _pg_sequences(conn, texts)
        bad_texts = [x[:120] for x, pg in zip(texts, pg_texts, strict=True) if pg != french.analyze(x)]
        assert not bad_texts, f"{len(bad_texts)} texts analysed differently: {bad_texts[:5]}"


def test_committed_word_list_matches_postgres(migrated_db) -> None:
    words = [w for w in WORDS.read_text(encoding="utf-8").splitlines() if w and not w.startswith("#")]
    _assert_identical(migrated_db(), words + [" ".join(words)])


def test_every_piaf_token_matches_postgres(migrated_db) -> None:
    if not PIAF_JSON.exists():
        pytest.skip(f"PIAF not present at {PIAF_JSON}: the full-corpus comparison needs ../shared/datasets/piaf")
    data = json.loads(PIAF_JSON.read_text(encoding="utf-8"))
    texts = [p["context"] for a in data["data"] for p in a["paragraphs"]]
    texts += [q["question"] for a in data["data"] for p in a["paragraphs"] for q in p["qas"]]
    assert len(texts) > 9000
    _assert_identical(migrated_db(), texts)


def test_inflections_and_accents_meet() -> None:
    assert {french.analyze(w)[0] for w in ("sinistres", "Sinistre", "SINISTRÉS", "sinistré")} == {"sinistr"}
    assert french.analyze("délais") == french.analyze("delai")
    assert french.analyze("œuvre") == french.analyze("oeuvre")
    assert french.analyze("de\u0301claration") == french.analyze("déclaration")  # NFD input


def test_query_terms_drop_stop_words_but_keep_negations() -> None:
    terms = french.query_terms("Comment déclarer un sinistre à l'assureur ? Ce qui n'est pas couvert, sans franchise")
    assert "sinistr" in terms and "assureur" in terms
    assert "pas" in terms and "san" in terms or "sans" in terms
    for stop in ("un", "a", "l", "ce", "qui", "est"):
        assert stop not in terms
    assert french.query_terms("le la les de des") == []
    assert french.query_terms("sinistre sinistres Sinistre") == ["sinistr"]


def test_migration_holds_the_generated_folding_function() -> None:
    sql = (REPO / "migrations" / "0002_french_text_search.sql").read_text(encoding="utf-8")
    assert folding.render_sql() in sql, "regenerate: python -m ragfr.analysis.folding --sql"
    frm, to, delete = folding.generate()
    assert (frm, to, delete) == (folding.FOLD_FROM, folding.FOLD_TO, folding.FOLD_DELETE), (
        "folding tables differ from this Python's Unicode data: run python -m ragfr.analysis.folding --generate"
    )
    assert re.search(r"ragfr_fts_prepare\(ragfr_fold\(", sql)
