"""The team's corpus and questions: PIAF paragraphs (one document each) and questions written on them."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from ragfr.errors import ConfigError
from ragfr.eval.piaf import load_piaf


@dataclass(frozen=True)
class Corpus:
    documents: dict[str, str]  # file name -> text, in upload order
    questions: list[tuple[str, str]]  # (question, the file it was written on), in pool order


def team_corpus(path: Path, *, documents: int, questions: int, seed: int = 0) -> Corpus:
    """`documents` paragraphs drawn (seeded) from all of PIAF, and the first question of the first
    `questions` of them: the same corpus and pool on every run with the same arguments."""
    if questions > documents:
        raise ConfigError(f"--questions {questions} is more than --documents {documents}: each question is "
                          "asked about one uploaded paragraph")
    paragraphs = [(article.get("title", ""), p) for article in load_piaf(path)["data"]
                  for p in article.get("paragraphs", []) if p.get("qas")]
    if documents > len(paragraphs):
        raise ConfigError(f"--documents {documents}: PIAF has {len(paragraphs)} paragraphs with questions")
    chosen = random.Random(seed).sample(paragraphs, documents)
    docs: dict[str, str] = {}
    pool: list[tuple[str, str]] = []
    for n, (title, paragraph) in enumerate(chosen):
        name = f"piaf-{n:04d}.txt"
        docs[name] = f"{title}\n\n{paragraph['context']}"
        if n < questions:
            pool.append((str(paragraph["qas"][0]["question"]).strip(), name))
    return Corpus(docs, pool)
