"""The French-aware chunker shared by ingestion and evaluation: offsets, size, word boundaries, headings,
abbreviations and overlap, on hand-written French and on every PIAF paragraph when the dataset is here."""

from __future__ import annotations

import json
import random
import re

import pytest
from tests.support.paths import PIAF_JSON as PIAF

from ragfr.errors import ConfigError
from ragfr.ingest import Chunk, ChunkConfig, chunk_text

CONTRACT = """\
Titre I – Dispositions générales

Article 1
Le présent contrat est conclu entre M. Dupont et la société Assurix. Il prend effet le 1er janvier 2024. \
Voir l'art. 12 pour les exclusions, cf. annexe.

Article 2
L'assuré déclare le sinistre dans les cinq jours ouvrés. Passé ce délai, l'assureur peut refuser \
la garantie ! Est-ce clair ? Oui.

Article 12
Sont exclus : les dommages intentionnels et les faits de guerre. Les catastrophes naturelles sont \
couvertes selon la loi du 13 juillet 1982 (av. J.-C. n'a rien à voir ici).
"""


def _check_invariants(text: str, chunks: list[Chunk], config: ChunkConfig) -> None:
    for i, chunk in enumerate(chunks):
        assert chunk.index == i
        assert text[chunk.start : chunk.end] == chunk.text and chunk.text.strip() == chunk.text
        assert len(chunk.text) <= config.size + 120  # only a heading glued past the end may exceed
        # Never inside a word: each edge touches whitespace or the end of the text.
        assert chunk.start == 0 or text[chunk.start - 1].isspace(), text[chunk.start - 10 : chunk.start + 10]
        assert chunk.end == len(text) or text[chunk.end].isspace(), text[chunk.end - 10 : chunk.end + 10]
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert nxt.start > prev.start and nxt.end > prev.end  # progress
        assert prev.end - nxt.start <= config.overlap  # overlap never exceeds the setting
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.start, chunk.end))
    lost = [i for i, c in enumerate(text) if not c.isspace() and i not in covered]
    assert not lost, f"characters dropped at {lost[:5]}"


def test_headings_stay_with_their_text_and_abbreviations_do_not_end_sentences() -> None:
    config = ChunkConfig(size=200, overlap=40)
    chunks = chunk_text(CONTRACT, config)
    _check_invariants(CONTRACT, chunks, config)
    for chunk in chunks:
        last_line = chunk.text.splitlines()[-1]
        assert not re.fullmatch(r"(Article \d+|Titre I.*)", last_line), f"heading left at the end: {chunk.text!r}"
    starts = [c.text.split("\n", 1)[0] for c in chunks]
    assert "Article 2" in starts and "Article 12" in starts  # each article opens its own chunk, no overlap
    joined = "\n".join(c.text for c in chunks)
    assert "M. Dupont" in joined
    for chunk in chunks:
        assert not chunk.text.endswith(("M.", "art.", "cf.", "av."))


def test_long_paragraph_is_cut_between_sentences_with_sentence_overlap() -> None:
    sentences = [f"La phrase numéro {i} décrit une clause du contrat d'assurance habitation." for i in range(40)]
    text = " ".join(sentences)
    config = ChunkConfig(size=300, overlap=80)
    chunks = chunk_text(text, config)
    _check_invariants(text, chunks, config)
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.text.startswith("La phrase") and chunk.text.endswith("habitation.")
    assert all(prev.end > nxt.start for prev, nxt in zip(chunks, chunks[1:], strict=False))  # they overlap


def test_sentence_longer_than_a_chunk_is_cut_between_words_and_giant_tokens_hard() -> None:
    text = "mot " * 400 + "Z" * 700 + " fin."
    config = ChunkConfig(size=250, overlap=30)
    chunks = chunk_text(text.strip(), config)
    for chunk in chunks:
        assert len(chunk.text) <= 250
        assert "Z" in chunk.text or chunk.text.replace("mot", "").replace("fin.", "").strip() == ""


def test_small_text_is_one_chunk_and_blank_text_none() -> None:
    assert [c.text for c in chunk_text("  Bonjour.  ")] == ["Bonjour."]
    assert chunk_text(" \n\n \t") == []


@pytest.mark.parametrize(("size", "overlap"), [(10, 0), (100, 50), (100, -1), (1000, 600)])
def test_bad_configs_are_refused(size: int, overlap: int) -> None:
    with pytest.raises(ConfigError, match="chunk"):
        ChunkConfig(size=size, overlap=overlap)


def test_random_french_documents_keep_every_invariant() -> None:
    rng = random.Random(7)
    words = ("sinistre assureur contrat garantie déclaration franchise l'assuré M. Dupont art. 12 "
             "cf. p. 3 habitation résiliation préavis « clause » (voir) indemnité—montant 1er").split()
    for _ in range(200):
        paragraphs = []
        for _ in range(rng.randint(1, 8)):
            if rng.random() < 0.3:
                paragraphs.append(f"Article {rng.randint(1, 99)}")
            sentences = [
                " ".join(rng.choice(words) for _ in range(rng.randint(1, 40))).capitalize() + rng.choice(".!?…")
                for _ in range(rng.randint(1, 10))
            ]
            paragraphs.append(" ".join(sentences))
        text = "\n\n".join(paragraphs)
        config = ChunkConfig(size=rng.choice([80, 200, 500]), overlap=rng.choice([0, 20, 39]))
        _check_invariants(text, chunk_text(text, config), config)


@pytest.mark.skipif(not PIAF.is_file(), reason=f"PIAF dataset absent ({PIAF}): real-paragraph check skipped")
def test_every_piaf_paragraph_keeps_every_invariant() -> None:
    data = json.loads(PIAF.read_text(encoding="utf-8"))
    contexts = [p["context"] for article in data["data"] for p in article["paragraphs"]]
    assert len(contexts) > 1000
    config = ChunkConfig(size=400, overlap=60)
    for context in contexts:
        text = context.strip()
        _check_invariants(text, chunk_text(text, config), config)
    assert chunk_text(contexts[0]) == chunk_text(contexts[0])  # deterministic
