"""French analysis identical to the database's `ragfr_french` configuration (migrations/0002).

PostgreSQL analyses every stored chunk (a trigger, so stock Open WebUI writes are covered); Python analyses
queries and, on Open WebUI's legacy in-memory BM25 path, documents too. Both must yield the same lexemes or
a query term silently never matches, so each step mirrors one step of the SQL side and
tests/analysis/test_french_analysis.py compares them on every PIAF token:

  SQL (ragfr_to_tsvector)               Python (analyze)
  ragfr_fold: accents, ligatures        folding.fold: the same generated table
  ragfr_fts_prepare: non-alnum -> ' '   tokens(): runs of letters/digits
  ragfr_french_stem (Snowball french)   PyStemmer 2.2.0.3 'french': libstemmer of the same Snowball
                                        release as PostgreSQL 15 (newer releases stem "française" and
                                        "bijoux" differently, so the pin matters)
  numbers and digit-words: simple       lowercase, no stemming

Stop words are removed from queries only (documents keep every token so BM25 lengths are plain token
counts). The list is the packaged `stop-words` French list, folded, minus the words that carry meaning in
contracts: negations and exceptions ("non couvert", "sans franchise", "sauf", "hors").
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache

import Stemmer
from stop_words import get_stop_words

from ragfr.analysis.folding import fold

# PostgreSQL refuses lexemes longer than this many bytes ("word is too long to be indexed") and drops them.
MAX_LEXEME_BYTES = 2047

MEANINGFUL_IN_CONTRACTS = frozenset({"non", "sans", "pas", "aucun", "aucune", "aucuns", "jamais", "hors", "sauf"})


@lru_cache(maxsize=1)
def _token_pattern() -> re.Pattern[str]:
    # glibc's [[:alnum:]] (the database side) counts combining marks as parts of words (Hebrew points,
    # Devanagari vowel signs); Python's \w does not, so they are added to the class explicitly.
    marks = [cp for cp in range(0x80, sys.maxunicode + 1) if unicodedata.category(chr(cp)) in ("Mn", "Mc")]
    ranges, start = [], marks[0]
    for prev, cp in zip(marks, marks[1:] + [-1], strict=True):
        if cp != prev + 1:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(prev))}" if prev > start else re.escape(chr(start)))
            start = cp
    return re.compile(r"(?:[^\W_]|[" + "".join(ranges) + "])+")


def tokens(text: str) -> list[str]:
    """Runs of letters and digits, as the database sees them after ragfr_fts_prepare."""
    return _token_pattern().findall(text)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer._Stemmer:
    return Stemmer.Stemmer("french")


@lru_cache(maxsize=200_000)
def lexeme(token: str) -> str | None:
    """The lexeme PostgreSQL stores for one token of already folded text, or None where it stores nothing."""
    if len(token.encode("utf-8")) > MAX_LEXEME_BYTES:
        return None
    lowered = token.lower()
    if any(ch.isdigit() for ch in token):
        return lowered  # numword / int / uint: 'simple', no stemming
    return str(_stemmer().stemWord(lowered))


def analyze(text: str) -> list[str]:
    """Every lexeme of `text` in order, stop words included: what to_tsvector('ragfr_french') indexes."""
    return [lx for lx in map(lexeme, tokens(fold(text))) if lx]


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """The folded, lowercased French stop list applied to queries."""
    return frozenset(fold(w).lower() for w in get_stop_words("french")) - MEANINGFUL_IN_CONTRACTS


def query_terms(text: str) -> list[str]:
    """Distinct lexemes of a query, stop words removed, in first-occurrence order."""
    stops = stop_words()
    seen: dict[str, None] = {}
    for token in tokens(fold(text)):
        if token.lower() in stops:
            continue
        lx = lexeme(token)
        if lx:
            seen.setdefault(lx, None)
    return list(seen)
