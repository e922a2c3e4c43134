"""Integrity of the committed golden set (eval/golden): the rules PROTOCOL.md promises."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from tests.support.paths import GOLDEN

from ragfr.eval.beir import load_dataset

REQUIRED_TAGS = ("inflection", "accent-typed", "accent-omitted", "negation", "identifier", "article", "filter")


def _words(text: str) -> set[str]:
    folded = unicodedata.normalize("NFD", text.lower())
    folded = "".join(c for c in folded if unicodedata.category(c) != "Mn")
    return {w for w in re.findall(r"\w+", folded) if len(w) >= 5}


def test_size_and_coverage() -> None:
    ds = load_dataset(GOLDEN)
    assert 40 <= len(ds.corpus) <= 80
    assert len(ds.queries) >= 50
    tags = Counter(t for q in ds.queries.values() for t in q.tags)
    missing = [t for t in REQUIRED_TAGS if tags[t] == 0]
    assert not missing, f"no query tagged {missing}"
    assert set(ds.qrels) == set(ds.queries), "every query is labelled"


def test_grades_and_a_full_answer_per_query() -> None:
    ds = load_dataset(GOLDEN)
    for qid, judged in ds.qrels.items():
        assert set(judged.values()) <= {1, 2}, qid
        assert 2 in judged.values(), f"{qid} has no document that answers it (grade 2)"


def test_filtered_labels_pass_their_filter_and_face_a_distractor() -> None:
    ds = load_dataset(GOLDEN)
    filtered = [q for q in ds.queries.values() if q.filters]
    assert filtered
    for query in filtered:
        def passes(doc_id: str, query=query) -> bool:
            meta = ds.corpus[doc_id].metadata
            return all(meta.get(k) == v for k, v in query.filters.items())

        assert all(passes(d) for d in ds.qrels[query.id]), f"{query.id}: a label fails its own filter"
        words = _words(query.text)
        distractors = [d for d, doc in ds.corpus.items()
                       if not passes(d) and words & _words(doc.title + " " + doc.text)]
        assert distractors, f"{query.id}: nothing outside the filter shares its words, the filter is untested"


def test_accent_pair_has_identical_labels() -> None:
    ds = load_dataset(GOLDEN)
    assert ds.queries["g02"].text == "delai declaration sinistre"
    assert ds.queries["g03"].text == "délai déclaration sinistre"
    assert ds.qrels["g02"] == ds.qrels["g03"]
