"""Benchmark queries: PIAF questions (real French) paired with query vectors near stored rows.

A question and its vector are unrelated (the vectors are random, see corpus.py); each vector is a noisy
copy of a randomly chosen stored vector, so every query has a true nearest neighbour as a real question
would, and the rest of its top 10 is decided by the geometry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from ragfr_tools.bench.corpus import CorpusSpec, Piaf, chunk_ids, noisy_copy

NOISE = 0.75  # cosine(query, its source row) ~ 0.8


@dataclass(frozen=True)
class QuerySet:
    texts: list[str]
    vectors: list[np.ndarray]
    sources: list[str]  # the row each vector is a noisy copy of

    def __len__(self) -> int:
        return len(self.texts)

    def head(self, n: int) -> QuerySet:
        """The first `n` queries (a benchmark's cases and its recall use prefixes of one set)."""
        return QuerySet(self.texts[:n], self.vectors[:n], self.sources[:n])


def make_queries(conn: psycopg.Connection[Any], spec: CorpusSpec, piaf: Piaf, n: int, noise: float = NOISE) -> QuerySet:
    rng = np.random.default_rng([spec.seed, 5])
    texts = _draw_questions(rng, piaf, n)
    ids = chunk_ids(spec.rows)
    sources = [ids[int(i)] for i in rng.choice(spec.rows, n, replace=False)]
    stored = dict(conn.execute(
        "SELECT id, vector::text FROM document_chunk WHERE id = ANY(%s)", (sources,)
    ).fetchall())
    vectors = [noisy_copy(parse_vector(stored[s]), noise, rng) for s in sources]
    return QuerySet(texts, vectors, sources)


def question_texts(piaf: Piaf, seed: int, n: int) -> list[str]:
    """The first `n` questions of make_queries' draw for `seed`, without the vectors (no database needed)."""
    return _draw_questions(np.random.default_rng([seed, 5]), piaf, n)


def _draw_questions(rng: np.random.Generator, piaf: Piaf, n: int) -> list[str]:
    n = min(n, len(piaf.questions))
    return [piaf.questions[int(i)] for i in rng.choice(len(piaf.questions), n, replace=False)]


def parse_vector(text: str) -> np.ndarray:
    return np.array(text.strip("[]").split(","), dtype=np.float32)
