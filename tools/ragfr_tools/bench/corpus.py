"""The synthetic benchmark corpus: real French text, random geometry, exact selectivity classes.

Texts are composed from PIAF sentences (a window of consecutive sentences of one paragraph, topped up
with sentences from another paragraph of the same article until a drawn target length), so the lexical
arm sees real French vocabulary, document frequencies and chunk lengths like Open WebUI's default
1000-character chunks. Vectors are random unit vectors: no 1024-dim model (bge-m3) runs offline here, so
the vector geometry is NOT that of real embeddings, and recall figures are for this geometry (see
`Geometry`). Every chunk carries `vmetadata.sel`, one of the disjoint classes of `SEL_CLASSES`, whose
sizes are exact fractions of the corpus so filtered queries have a known passing set.

Everything is a pure function of `CorpusSpec`; `CorpusSpec.key()` names the cached database.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from enum import StrEnum
from functools import lru_cache
from pathlib import Path

import numpy as np

from ragfr.errors import ConfigError
from ragfr.eval.piaf import PIAF_V11_SHA256, load_piaf

# Bump when the generator's output changes for the same parameters: cached databases are then rebuilt.
GENERATOR_VERSION = 1
COLLECTION = "bench"
# Selectivity label -> fraction of the corpus; the rest is "rest". Disjoint, so each is an exact class.
SEL_CLASSES: dict[str, float] = {"p0.1": 0.001, "p1": 0.01, "p10": 0.10}
LOWRANK_RANK = 32
LOWRANK_NOISE = 0.05  # per coordinate: |noise| ~ 0.05 * sqrt(1024) = 1.6 vs |signal| ~ sqrt(32) = 5.7
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZÀ-ÝÉ«\"(])")


class Geometry(StrEnum):
    """How the random vectors are drawn.

    uniform: independent uniform directions. In 1024 dims every pair is nearly orthogonal and the 10
             nearest neighbours of a query barely stand out from the rest: the hardest case for an HNSW
             graph (its greedy walk has no gradient to follow), far from real embeddings.
    lowrank: Gaussian points in a random 32-dim subspace plus a little full-rank noise (~8 % of the
             energy): a low intrinsic dimension, like real text embeddings, whose neighbourhoods an
             HNSW graph can navigate. Still synthetic: real bge-m3 figures need real bge-m3 vectors.
    """

    UNIFORM = "uniform"
    LOWRANK = "lowrank"


@dataclass(frozen=True)
class CorpusSpec:
    rows: int
    dims: int = 1024
    seed: int = 20261130
    geometry: Geometry = Geometry.UNIFORM
    min_chars: int = 400
    max_chars: int = 1000
    piaf_sha256: str = ""

    def __post_init__(self) -> None:
        if self.rows < 1000 or self.rows % 1000:
            raise ConfigError(f"corpus size must be a positive multiple of 1000 (exact 0.1 % class), got {self.rows}")
        if not 2 <= self.dims <= 16000:
            raise ConfigError(f"--dims must be between 2 and 16000, got {self.dims}")

    def key(self) -> str:
        """Hash of everything the loaded database depends on (with the schema's checksums, added by the store)."""
        payload = {**asdict(self), "geometry": self.geometry.value, "generator": GENERATOR_VERSION}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]

    def class_sizes(self) -> dict[str, int]:
        sizes = {name: round(self.rows * frac) for name, frac in SEL_CLASSES.items()}
        sizes["rest"] = self.rows - sum(sizes.values())
        return sizes


@dataclass(frozen=True)
class Article:
    title: str
    paragraphs: list[list[str]]  # sentences of each paragraph


@dataclass(frozen=True)
class Piaf:
    articles: list[Article]
    questions: list[str]
    sha256: str


def read_piaf(path: Path) -> Piaf:
    data = load_piaf(path)  # checks the published sha256
    articles: list[Article] = []
    questions: list[str] = []
    for entry in data["data"]:
        paragraphs = []
        for paragraph in entry["paragraphs"]:
            sentences = [s.strip() for s in _SENTENCE_END.split(str(paragraph["context"])) if s.strip()]
            if sentences:
                paragraphs.append(sentences)
            questions += [str(qa["question"]).strip() for qa in paragraph.get("qas", []) if str(qa["question"]).strip()]
        if paragraphs:
            articles.append(Article(str(entry.get("title", "")), paragraphs))
    return Piaf(articles, questions, PIAF_V11_SHA256)


@dataclass(frozen=True)
class Chunk:
    id: str
    text: str
    metadata: dict[str, str | int]


def chunk_ids(rows: int) -> list[str]:
    return [f"bench-{i:07d}" for i in range(rows)]


def selectivity_labels(spec: CorpusSpec) -> np.ndarray:
    """Label of each row: exact class sizes, spread over the corpus by a seeded permutation."""
    labels = np.full(spec.rows, "rest", dtype=object)
    order = np.random.default_rng([spec.seed, 1]).permutation(spec.rows)
    start = 0
    for name, size in spec.class_sizes().items():
        if name != "rest":
            labels[order[start:start + size]] = name
            start += size
    return labels


def chunks(spec: CorpusSpec, piaf: Piaf) -> Iterator[Chunk]:
    rng = np.random.default_rng([spec.seed, 2])
    labels = selectivity_labels(spec)
    for i, chunk_id in enumerate(chunk_ids(spec.rows)):
        a = int(rng.integers(len(piaf.articles)))
        article = piaf.articles[a]
        target = int(rng.integers(spec.min_chars, spec.max_chars + 1))
        p = int(rng.integers(len(article.paragraphs)))
        sentences = article.paragraphs[p]
        s = int(rng.integers(len(sentences)))
        parts: list[str] = []
        size = 0
        # A window of consecutive sentences, then same-article sentences picked at random: topical text,
        # and (the random tail) practically never two identical chunks, as in a real corpus.
        while size < target:
            if s < len(sentences):
                sentence = sentences[s]
                s += 1
            else:
                other = article.paragraphs[int(rng.integers(len(article.paragraphs)))]
                sentence = other[int(rng.integers(len(other)))]
            parts.append(sentence)
            size += len(sentence) + 1
        text = " ".join(parts)[: spec.max_chars]
        yield Chunk(chunk_id, text, {"sel": str(labels[i]), "source": article.title, "article": a})


def block_vectors(spec: CorpusSpec, block: int, n: int = 1000) -> np.ndarray:
    """Unit vectors (float32) of the first `n` rows of block `block` (rows 1000*block ...), from a
    per-block seed so any block is reproducible alone."""
    rng = np.random.default_rng([spec.seed, 3, block])
    if spec.geometry is Geometry.LOWRANK:
        basis = _basis(spec)
        x = rng.standard_normal((n, basis.shape[1])) @ basis.T
        x += LOWRANK_NOISE * rng.standard_normal((n, spec.dims))
    else:
        x = rng.standard_normal((n, spec.dims))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


@lru_cache(maxsize=2)
def _basis(spec: CorpusSpec) -> np.ndarray:
    """Orthonormal basis (dims x rank) of the low-rank geometry's subspace."""
    rank = min(LOWRANK_RANK, spec.dims)
    q, _ = np.linalg.qr(np.random.default_rng([spec.seed, 4]).standard_normal((spec.dims, rank)))
    return q


def noisy_copy(vector: np.ndarray, noise: float, rng: np.random.Generator) -> np.ndarray:
    """A query near a stored vector: cosine to it ~ 1/sqrt(1 + noise^2)."""
    n = rng.standard_normal(vector.shape[0])
    q = vector / np.linalg.norm(vector) + noise * n / np.linalg.norm(n)
    return (q / np.linalg.norm(q)).astype(np.float32)
