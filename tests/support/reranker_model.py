"""A STAND-IN for the trained French cross-encoder, in the folder shape `make reranker` leaves (model files +
manifest.json with `files_sha256`), so tools/ragfr_tools/reranker/package.py can lay it out as the Hugging Face
cache the chart and `make up UP_RERANKER=...` give Open WebUI. Its scores mean nothing (tests/support/standins.py):
the trained weights take an hour of training and cannot be fetched in CI.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from tests.support.standins import tiny_cross_encoder


def _words(texts: Iterable[str]) -> tuple[str, ...]:
    """The lower-cased, accent-stripped words of `texts`, as BERT's basic tokenizer splits them."""
    out: dict[str, None] = {}
    for text in texts:
        bare = "".join(c for c in unicodedata.normalize("NFD", text.lower()) if not unicodedata.combining(c))
        out.update(dict.fromkeys(re.findall(r"\w+", bare)))
    return tuple(out)


def stand_in_model(path: Path, texts: Iterable[str] | None = None, *, seed: int = 29, std: float = 0.5) -> str:
    """A tiny cross-encoder folder with the manifest train.py writes (only what packaging reads); its commit.

    texts=None: tiny_cross_encoder's weights as they are (random, ~constant scores: enough for plumbing that
    reads no score). texts given: every word of `texts` in the vocabulary, a tokenizer that knows them, and
    seeded weights drawn wide enough (std) that different passages get different scores, so an ORDER can be
    checked; still random, still no quality."""
    if texts is None:
        tiny_cross_encoder(path, words=("vol", "assureur", "sinistre"))
    else:
        import torch
        from transformers import BertForSequenceClassification

        tiny_cross_encoder(path, words=_words(texts))
        model = BertForSequenceClassification.from_pretrained(path)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, param in model.named_parameters():
                if "LayerNorm" not in name:
                    param.copy_(torch.randn(param.shape, generator=generator) * std)
        model.save_pretrained(path)
    files = {p.relative_to(path).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(path.rglob("*")) if p.is_file()}
    files_sha256 = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    (path / "manifest.json").write_text(json.dumps({"stand_in": True, "files": files, "files_sha256": files_sha256}))
    return files_sha256[:40]
