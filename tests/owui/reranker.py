"""What the tests with Open WebUI's cross-encoder ON share (test_chat_reranker.py, test_browser_reranker.py).

The model: the trained French cross-encoder when $RAGFR_TEST_RERANKER names its folder (a `make reranker`
output, e.g. .state/reranker/model-d6bd6fbf6999), else a STAND-IN (tests/support/reranker_model.py: tiny
random weights, seeded, with a vocabulary so that passages score differently). It is packaged as the Hugging
Face cache tools/ragfr_tools/reranker/package.py lays out, which Open WebUI loads OFFLINE by name with the
settings of `make up UP_RERANKER=...` / the chart's `openwebui.reranker.source: image` (`server_env`).
`logits` scores (question, passage) pairs as Open WebUI does, in its venv, before the sigmoid it applies.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml
from tests.support.paths import REPO
from tests.support.reranker_model import stand_in_model

from ragfr_tools.reranker.package import REPO as MODEL_REPO
from ragfr_tools.reranker.package import package

from .conftest import OWUI_PYTHON

CHART_EXAMPLE = REPO / "charts" / "ragfr" / "examples" / "reranker-image.yaml"
SCORE = """
import json, sys
import torch
from sentence_transformers import CrossEncoder
ce = CrossEncoder(sys.argv[1], device="cpu")
pairs = [tuple(p) for p in json.load(sys.stdin)]
print(json.dumps([float(s) for s in ce.predict(pairs, batch_size=32, activation_fn=torch.nn.Identity(),
                                                show_progress_bar=False)]))
"""


@dataclass
class Model:
    snapshot: Path  # the packaged model, as Open WebUI loads it (cache/models--ragfr--reranker-fr/snapshots/<c>)
    cache: Path  # the Hugging Face cache holding it
    trained: bool  # $RAGFR_TEST_RERANKER's trained model, not the stand-in


def trained_model() -> Path | None:
    """$RAGFR_TEST_RERANKER's folder (checked to be a `make reranker` output), or None: use the stand-in."""
    trained = os.environ.get("RAGFR_TEST_RERANKER")
    if not trained:
        return None
    model = Path(trained)
    assert (model / "manifest.json").is_file(), f"RAGFR_TEST_RERANKER={trained}: no trained model there"
    return model


def packaged_model(tmp: Path, texts: Iterable[str], *, seed: int = 29) -> Model:
    """The trained model, or a stand-in whose vocabulary holds every word of `texts` (seeded by `seed`),
    packaged as a Hugging Face cache under `tmp`."""
    model = trained_model()
    if model is None:
        model = tmp / f"stand-in-{seed}"
        stand_in_model(model, list(texts), seed=seed)
    cache = tmp / f"hf-cache-{model.name}"
    commit = package(model, cache)
    snapshot = cache / f"models--{MODEL_REPO.replace('/', '--')}" / "snapshots" / commit
    return Model(snapshot, cache, trained_model() is not None)


def chart_threshold() -> float:
    """RAGFR_GATE_CE_EVIDENCE the chart ships for the trained model (calibrated by gate_rates, docs/reranker.md)."""
    values = yaml.safe_load(CHART_EXAMPLE.read_text(encoding="utf-8"))
    return float(values["openwebui"]["env"]["RAGFR_GATE_CE_EVIDENCE"])


def server_env(model: Model, threshold: float) -> dict[str, str]:
    """The cross-encoder settings of `make up UP_RERANKER=...`, with the gate on its scale at `threshold`."""
    return {
        "RAG_RERANKING_MODEL": MODEL_REPO,
        "SENTENCE_TRANSFORMERS_HOME": str(model.cache),
        "HF_HOME": str(model.cache),
        "HF_HUB_OFFLINE": "1",
        "RAGFR_GATE_CE_EVIDENCE": repr(threshold),
    }


def logits(snapshot: Path, pairs: list[tuple[str, str]]) -> list[float]:
    """The cross-encoder's raw logits for (question, passage) pairs: sentence-transformers' CrossEncoder on the
    snapshot Open WebUI loads, in Open WebUI's venv (its versions), without the sigmoid Open WebUI applies."""
    done = subprocess.run([str(OWUI_PYTHON), "-c", SCORE, str(snapshot)], input=json.dumps(pairs), text=True,
                          capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return [float(x) for x in json.loads(done.stdout.strip().splitlines()[-1])]


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))
