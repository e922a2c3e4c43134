"""The tokenizer the patched legacy BM25 path (rank_bm25 in Open WebUI) uses for queries and documents.

It is `ragfr.analysis.french.analyze`, the same lexemes PostgreSQL's `ragfr_french` produces, so the
fallback path matches "sinistres" to "sinistre" exactly as the native path does.
"""

from __future__ import annotations

from ragfr.analysis.french import analyze


def tokenize(text: str) -> list[str]:
    return analyze(text or "")
