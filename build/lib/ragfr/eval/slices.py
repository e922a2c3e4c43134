"""Query slices computed from the data rather than labelled by hand, so PIAF can be sliced too.

`stem-match`: the query shares a term with a relevant document ONLY through stemming -- some query word
(stop words aside) never appears in the document, even lower-cased and accent-folded, while its Snowball
lexeme does (`sinistrés` vs `sinistre`). Folding is applied to both sides first, so accents alone never
put a query in this slice: it isolates what stemming adds.
"""

from __future__ import annotations

from dataclasses import replace

from ragfr.analysis.french import analyze, fold, lexeme, stop_words, tokens
from ragfr.eval.beir import Dataset, Query

STEM_MATCH = "stem-match"


def _surfaces(text: str) -> set[str]:
    return {t.lower() for t in tokens(fold(text))}


def stem_only_match(query: str, document: str) -> bool:
    surfaces = _surfaces(document)
    lexemes = set(analyze(document))
    stops = stop_words()
    for token in tokens(fold(query)):
        surface = token.lower()
        if surface in stops or surface in surfaces:
            continue
        lx = lexeme(token)
        if lx and lx in lexemes:
            return True
    return False


def with_derived_tags(dataset: Dataset, queries: list[Query]) -> list[Query]:
    out = []
    for query in queries:
        relevant = [d for d, g in dataset.qrels.get(query.id, {}).items() if g > 0]
        texts = [f"{dataset.corpus[d].title}\n{dataset.corpus[d].text}" for d in relevant]
        if any(stem_only_match(query.text, text) for text in texts) and STEM_MATCH not in query.tags:
            query = replace(query, tags=(*query.tags, STEM_MATCH))
        out.append(query)
    return out
