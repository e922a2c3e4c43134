"""Does a model that reads the question with the passages pay for its seconds in the evidence gate? (issue 38
item 2: "try an answerability model ... keep it only if it pays for its seconds")

The model: a cross-encoder on the first 6 layers of multilingual-e5-small (ragfr_tools.reranker.convert, the
base the French reranker starts from), trained with the reranker's loop (ragfr_tools.reranker.train: BCE on
the logit, seeded, word embeddings frozen) to say whether a passage answers a question. It reads the whole
passage: max_length 320 tokens holds a 1,000-character chunk with its question (the reranker's 128 cut a third
of PIAF's answers off).

Data: the gate fit's searches (.state/gatefit/rows.jsonl from ragfr_tools.eval.gate_fit, which keeps each
search's top 3 passage ids), their texts read back from the database the fit searched.
  train   FIT-side PIAF questions: positive, the question's own paragraph as its search ranked it in the top 3;
          negatives, the top passage of the same question asked of PIAF without its side's articles
          (near-domain) and of the insurance corpus (off-domain).
  score   a search's answerability: the highest logit over the top 3 passages (what the chat model reads).
  gates   the cross-encoder saw the FIT side, so both gates compared here are fitted on one half of a DEV
          sample (by a hash of the question id), their thresholds chosen on the other half by the product's
          rule (fitting.thresholds), their rates reported on a TEST sample: the 15 evidence features
          alone, and with the answerability score as a 16th. The shipped gate's rates on the same TEST rows
          are printed beside them.
  cost    seconds to score one search's 3 passages on this machine (what the chat would add per question).

    python -m ragfr_tools.eval.answerability --dsn DSN [--rows .state/gatefit/rows.jsonl]

Writes docs/bench/gate-answerability.json; the model goes to .state/answerability/ (not shipped).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ragfr.gate import fitting
from ragfr.gate.features import FEATURES
from ragfr.gate.fitted import FittedGate, load
from ragfr_tools.eval.gate_collect import read_rows
from ragfr_tools.eval.gate_fit import rates
from ragfr_tools.repo import REPO
from ragfr_tools.reranker.data import EMBEDDER
from ragfr_tools.reranker.hyper import HYPER

STATE = Path(".state/answerability")
OUT = REPO / "docs" / "bench" / "gate-answerability.json"
SCORE = "answerability"
HYPER_ANSWERABILITY = replace(HYPER, layers=6, head="mean", lr=1e-4, max_length=320, train_questions=500)


def _half(qid: str) -> str:
    return "a" if int(hashlib.sha256(f"half:{qid}".encode()).hexdigest(), 16) % 2 == 0 else "b"


def _texts(dsn: str, ids: set[str]) -> dict[str, str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return {str(i): str(t) for i, t in conn.execute(
            "SELECT id, text FROM document_chunk WHERE id = ANY(%s)", (sorted(ids),)).fetchall()}


def training_rows(rows: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """reranker "mined" rows {query, positive ids, negative ids} of FIT-side PIAF questions (texts later)."""
    by_q: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        if r["side"] == "fit" and r["source"] == "piaf":
            by_q.setdefault(r["qid"], {})[r["kind"]] = r
    usable = sorted(q for q, k in by_q.items()
                    if "answerable" in k and k["answerable"].get("relevant_rank") is not None
                    and {"near", "off"} <= set(k) and k["near"]["top3_ids"] and k["off"]["top3_ids"])
    chosen = sorted(random.Random(seed).sample(usable, min(n, len(usable))))
    out = []
    for q in chosen:
        k = by_q[q]
        a = k["answerable"]
        out.append({"query": a["text"], "positive": a["top3_ids"][a["relevant_rank"]],
                    "negatives": [k["near"]["top3_ids"][0], k["off"]["top3_ids"][0]]})
    return out


def sample(rows: list[dict[str, Any]], side: str, n: int, seed: int) -> list[dict[str, Any]]:
    """Every search of `n` sampled PIAF questions of `side` (answerable, near, off; misses kept apart), and
    every golden / unanswerable search of that side."""
    piaf = sorted({r["qid"] for r in rows if r["side"] == side and r["source"] == "piaf"})
    keep = set(random.Random(seed).sample(piaf, min(n, len(piaf))))
    return [r for r in rows if r["side"] == side and (r["source"] != "piaf" or r["qid"] in keep) and r["top3_ids"]]


def score(model_dir: Path, scored: list[dict[str, Any]], texts: dict[str, str]) -> tuple[list[float], list[float]]:
    """(answerability of each search: the max raw logit over its top 3, seconds each search took)."""
    import torch
    from sentence_transformers import CrossEncoder

    ce = CrossEncoder(str(model_dir), max_length=HYPER_ANSWERABILITY.max_length, device="cpu")
    out: list[float] = []
    seconds: list[float] = []
    started = time.monotonic()
    for n, r in enumerate(scored, 1):
        t = time.perf_counter()
        # raw logits (the library's default would apply a sigmoid), as ragfr.retrieval.rerank reads them
        logits = ce.predict([(r["text"], texts[i]) for i in r["top3_ids"]], batch_size=3, convert_to_numpy=True,
                            activation_fn=torch.nn.Identity())
        seconds.append(time.perf_counter() - t)
        out.append(float(max(logits)))
        if n % 200 == 0 or n == len(scored):
            el = time.monotonic() - started
            print(f"answerability: scored {n}/{len(scored)} searches, {el:.0f} s, eta "
                  f"{el / n * (len(scored) - n):.0f} s", flush=True)
    return out, seconds


def _gate(model: dict[str, Any], names: tuple[str, ...], th: dict[str, float]) -> FittedGate:
    return FittedGate(EMBEDDER, names, tuple(model["mean"]), tuple(model["scale"]), tuple(model["coef"]),
                      float(model["intercept"]), th["answer_at"], th["caution_at"], "experiment")


def compare(dev: list[dict[str, Any]], test: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, Any]:
    """Fit on DEV half a, thresholds on DEV half b, rates and AUC on TEST."""
    fit_rows = [r for r in dev if _half(r["qid"]) == "a" and r["kind"] != "miss"]
    model = fitting.fit([r["features"] for r in fit_rows], [r["kind"] == "answerable" for r in fit_rows],
                             names=names)
    gate = _gate(model, names, {"answer_at": 1.0, "caution_at": 0.0})
    b = [r for r in dev if _half(r["qid"]) == "b"]
    pb = [gate.probability(r["features"]) for r in b]
    th = fitting.thresholds([p for r, p in zip(b, pb, strict=True) if r["kind"] == "answerable"],
                                 [p for r, p in zip(b, pb, strict=True) if r["kind"] == "off"])
    gate = _gate(model, names, th)
    pt = [gate.probability(r["features"]) for r in test]
    return {"features": list(names), "thresholds": th, "model": model,
            "test": rates(test, [gate.decide(r["features"])[0] for r in test]),
            "auc_test": fitting.auc([p for r, p in zip(test, pt, strict=True) if r["kind"] == "answerable"],
                                         [p for r, p in zip(test, pt, strict=True) if r["kind"] in ("near", "off")])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", required=True, help="the database ragfr_tools.eval.gate_fit searched")
    ap.add_argument("--rows", type=Path, default=Path(".state/gatefit/rows.jsonl"))
    ap.add_argument("--questions", type=int, default=300, help="PIAF questions sampled per side, DEV and TEST")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(HYPER_ANSWERABILITY.threads))
    started = time.monotonic()
    rows = read_rows(args.rows)
    if not all("top3_ids" in r for r in rows):
        ap.error(f"{args.rows} has no passage ids: collect it again with ragfr_tools.eval.gate_fit --dsn ...")
    h = HYPER_ANSWERABILITY
    mined = training_rows(rows, h.train_questions, h.seed)
    dev, test = sample(rows, "dev", args.questions, h.seed), sample(rows, "test", args.questions, h.seed)
    needed = {i for m in mined for i in (m["positive"], *m["negatives"])} | {
        i for r in dev + test for i in r["top3_ids"]}
    texts = _texts(args.dsn, needed)
    STATE.mkdir(parents=True, exist_ok=True)
    mined_path = STATE / "pairs.jsonl"
    mined_path.write_text("".join(json.dumps({"query": m["query"], "positive": texts[m["positive"]],
                                              "negatives": [texts[i] for i in m["negatives"]]}, ensure_ascii=False)
                                  + "\n" for m in mined), encoding="utf-8")
    base, model_dir = STATE / "base-6l", STATE / "model"
    if not (base / "config.json").exists():
        from ragfr_tools.reranker import convert
        convert.main([str(base), "--layers", str(h.layers)])
    manifest: dict[str, Any]
    if (model_dir / "manifest.json").exists():
        manifest = json.loads((model_dir / "manifest.json").read_text())
        print(f"answerability: {model_dir} exists, not trained again", flush=True)
    else:
        from ragfr_tools.reranker.train import train
        manifest = train(base, mined_path, model_dir, h)
    scores, seconds = score(model_dir, dev + test, texts)
    for r, s in zip(dev + test, scores, strict=True):
        r["features"] = {**r["features"], SCORE: s}
    (STATE / "scores.jsonl").write_text("".join(
        json.dumps({"side": r["side"], "qid": r["qid"], "target": r["target"], "kind": r["kind"], SCORE: s}) + "\n"
        for r, s in zip(dev + test, scores, strict=True)))
    plain, stacked = compare(dev, test, FEATURES), compare(dev, test, (*FEATURES, SCORE))
    alone = fitting.auc([r["features"][SCORE] for r in test if r["kind"] == "answerable"],
                             [r["features"][SCORE] for r in test if r["kind"] in ("near", "off")])
    shipped = load(EMBEDDER)
    report = {
        "command": "python -m ragfr_tools.eval.answerability " + " ".join(
            a if a != args.dsn else "DSN" for a in (argv if argv is not None else sys.argv[1:])),
        "date": time.strftime("%Y-%m-%d"), "hyper": asdict(h),
        "train": {"questions": len(mined), "pairs": 3 * len(mined), "steps": manifest.get("steps"),
                  "train_seconds": manifest.get("train_seconds"), "final_loss": (manifest.get("losses") or [None])[-1]},
        "searches": {"dev": len(dev), "test": len(test)},
        "seconds_per_search": {"p50": round(statistics.median(seconds), 3),
                               "p95": round(sorted(seconds)[int(0.95 * (len(seconds) - 1))], 3)},
        "features_alone": plain, "with_answerability": stacked, "auc_test_answerability_alone": alone,
        "auc_test_rrf1_alone": fitting.auc([r["features"]["rrf1"] for r in test if r["kind"] == "answerable"],
                                                [r["features"]["rrf1"] for r in test if r["kind"] in ("near", "off")]),
        "shipped_gate_on_the_same_test": rates(test, [shipped.decide(r["features"])[0] for r in test])
        if shipped else None,
        "wall_seconds": round(time.monotonic() - started, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    for name, g in (("features alone", plain), ("with answerability", stacked)):
        t = g["test"]
        print(f"answerability: {name}: AUC {g['auc_test']:.3f}; answerable "
              + " / ".join(f"{t['answerable'][k]:.1%}" for k in ("answer", "caution", "refuse"))
              + "; near " + " / ".join(f"{t['near'][k]:.1%}" for k in ("answer", "caution", "refuse"))
              + "; off " + " / ".join(f"{t['off'][k]:.1%}" for k in ("answer", "caution", "refuse")), flush=True)
    print(f"answerability: AUC of the score alone {alone:.3f}; shipped gate on the same test rows "
          f"{report['shipped_gate_on_the_same_test']}", flush=True)
    print(f"answerability: {report['seconds_per_search']} s per search (3 passages); {args.out}; wall "
          f"{report['wall_seconds']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
