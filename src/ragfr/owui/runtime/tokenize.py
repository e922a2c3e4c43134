"""Tokenizers for the patched legacy BM25 path (rank_bm25 inside Open WebUI): ragfr's own analysis.

Documents get `analyze` (every lexeme, as PostgreSQL's `ragfr_french` indexes them); queries get
`query_terms` (distinct lexemes, stop words removed), exactly what the native path's lexical arm uses.
So "sinistres" meets "sinistre" on the fallback path as it does in the database.
"""

from __future__ import annotations

from ragfr.analysis.french import analyze, query_terms


def tokenize_document(text: str) -> list[str]:
    return analyze(text or "")


def tokenize_query(text: str) -> list[str]:
    return query_terms(text or "")
