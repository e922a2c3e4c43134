"""The recorded model's scores on fixed pairs, so a rerun anywhere can check "the same scores to 1e-4".

Pairs: a seeded sample of PIAF test-split questions (never trained on), each with its own paragraph and the
first other paragraphs of the same article (sorted by id), named by ids only. The raw logits of the recorded
model are committed beside its bench JSON (docs/bench/reranker-<hyper hash>-scores.json); `make reranker`
checks a freshly trained model against them and prints the largest difference.

    python -m ragfr_tools.reranker.fingerprint --piaf piaf-v1.1.json --model DIR [--record | --against OTHER]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragfr.eval.beir import Dataset
from ragfr.eval.piaf import load_piaf
from ragfr_tools.repo import REPO
from ragfr_tools.reranker.data import passage, sample_queries, split_dataset
from ragfr_tools.reranker.hyper import HYPER, Hyper, hyper_hash
from ragfr_tools.reranker.lock import row_per_line

QUESTIONS = 100
OTHERS = 3  # paragraphs of the same article beside the question's own: close, hard pairs
TOLERANCE = 1e-4


def fingerprint_path(h: Hyper = HYPER) -> Path:
    return REPO / "docs" / "bench" / f"reranker-{hyper_hash(h)}-scores.json"


def pairs(test: Dataset, h: Hyper = HYPER) -> list[tuple[str, str]]:
    """(question id, paragraph id) pairs, in a fixed order."""
    by_title: dict[str, list[str]] = {}
    for doc_id in sorted(test.corpus):
        by_title.setdefault(test.corpus[doc_id].title, []).append(doc_id)
    out: list[tuple[str, str]] = []
    for q in sample_queries(test, QUESTIONS, h.seed):
        own = next(iter(test.qrels[q.id]))
        others = [d for d in by_title[test.corpus[own].title] if d != own][:OTHERS]
        out.extend((q.id, d) for d in [own, *others])
    return out


def scores(model: Path, piaf: Path, h: Hyper = HYPER) -> list[list[Any]]:
    """[[question id, paragraph id, raw logit], ...] of `model` on the fixed pairs."""
    from ragfr.retrieval.rerank import CrossEncoderReranker

    _, _, test = split_dataset(load_piaf(piaf), h)
    reranker = CrossEncoderReranker(str(model), max_length=h.max_length, batch_size=h.rerank_top_n)
    out: list[list[Any]] = []
    chosen = pairs(test, h)
    for qid in dict.fromkeys(q for q, _ in chosen):
        docs = [d for q, d in chosen if q == qid]
        logits = reranker.score(test.queries[qid].text, [passage(test.corpus[d]) for d in docs])
        out.extend([qid, d, round(float(s), 6)] for d, s in zip(docs, logits, strict=True))
    return out


def largest_difference(a: list[list[Any]], b: list[list[Any]]) -> float:
    if [r[:2] for r in a] != [r[:2] for r in b]:
        raise ValueError("the two fingerprints are not on the same pairs")
    return max(abs(x[2] - y[2]) for x, y in zip(a, b, strict=True))


def record(model: Path, piaf: Path, out: Path, h: Hyper = HYPER) -> dict[str, Any]:
    from ragfr_tools.reranker.train import machine

    manifest = json.loads((model / "manifest.json").read_text())
    fp = {"hyper_hash": manifest["hyper_hash"], "model_sha256": manifest["model_sha256"],
          "trained_on": manifest.get("machine"), "scored_on": machine(), "tolerance": TOLERANCE,
          "scores": scores(model, piaf, h)}
    out.write_text(row_per_line(fp, "scores"), encoding="utf-8")
    return fp


def check(model: Path, piaf: Path, recorded: Path, h: Hyper = HYPER) -> tuple[bool, float, dict[str, Any]]:
    """(within TOLERANCE, the largest difference, the recorded fingerprint)."""
    fp = json.loads(recorded.read_text())
    diff = largest_difference(fp["scores"], scores(model, piaf, h))
    return diff <= TOLERANCE, diff, fp


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--piaf", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--record", action="store_true", help="write the model's fingerprint (the recorded model)")
    ap.add_argument("--against", type=Path, default=None,
                    help="a fingerprint JSON to compare with (default: the recorded one of this preset)")
    args = ap.parse_args(argv)
    if args.record:
        fp = record(args.model, args.piaf, fingerprint_path())
        print(f"fingerprint: {fingerprint_path()}: {len(fp['scores'])} scores of {fp['model_sha256'][:12]}")
        return 0
    against = args.against or fingerprint_path()
    ok, diff, fp = check(args.model, args.piaf, against)
    print(f"fingerprint: {args.model} against {fp['model_sha256'][:12]} ({against}): largest score difference "
          f"{diff:.2e} over {len(fp['scores'])} pairs: {'within' if ok else 'NOT within'} {TOLERANCE:g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
