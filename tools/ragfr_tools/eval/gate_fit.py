"""Fit the evidence gate (issue 38 item 2): a logistic regression over the evidence features of the FIT
side's searches (ragfr_tools.eval.gate_collect), its two thresholds chosen on the DEV side, its rates reported
on the TEST side beside the rank rule the chart ships, on the same searches.

The model and thresholds are the product's (ragfr.gate.fitting: a Newton solve of sklearn's
LogisticRegression(C, class_weight="balanced") objective; the shipped e5 coefficients of 2026-12-03 came from
sklearn's lbfgs, whose probabilities differ from the Newton optimum by at most 0.006 on the fit rows).

Labels: answerable (the fused top 3 holds the question's paragraph) = 1; near and off = 0; `miss` (the
collection holds the answer, the top 3 does not) is neither fitted on nor scored (reported as a count, with the
share each gate answers). Thresholds (dev side; the issue's goals, with a margin since dev is small):
  caution_at  the answerable's 2.5th percentile of p: at least 97.5 % of them are not refused;
  answer_at   the larger of the answerable's 8th percentile (>= 92 % answered without caution) and the
              off-domain's 98th percentile (<= 2 % answered without caution).

    python -m ragfr_tools.eval.gate_fit --dsn DSN --piaf piaf-v1.1.json [--rows .state/gatefit/rows.jsonl]

`--rows` reuses a collected file (no search); without it the searches run first and are saved there.
Writes docs/bench/gate-evidence.json (rates, AUCs, model) and the coefficients the package ships,
src/ragfr/gate/models/<embedding model>.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragfr.gate import fitting
from ragfr.gate.features import FEATURES
from ragfr.gate.fitted import from_json, slug
from ragfr_tools.eval.gate_collect import collect, read_rows
from ragfr_tools.repo import REPO
from ragfr_tools.reranker.data import EMBEDDER

PER_SIDE = {"fit": 800, "dev": 800, "test": 800}
OUT = REPO / "docs" / "bench" / "gate-evidence.json"
MODELS = REPO / "src" / "ragfr" / "gate" / "models"
KINDS = ("answerable", "miss", "near", "off")


def fit(rows: list[dict[str, Any]], c: float = 1.0) -> dict[str, Any]:
    """Standardized features, L2-regularized logistic regression, classes weighted equally: the product's fit
    (ragfr.gate.fitting, the one `ragfr gate calibrate` runs)."""
    train = [r for r in rows if r["kind"] != "miss"]
    return fitting.fit([r["features"] for r in train], [r["kind"] == "answerable" for r in train], c)


def thresholds(dev: list[dict[str, Any]], p: list[float]) -> dict[str, float]:
    """The product's rule (fitting.thresholds) with the off-domain questions as the negatives."""
    pos = [pi for r, pi in zip(dev, p, strict=True) if r["kind"] == "answerable"]
    off = [pi for r, pi in zip(dev, p, strict=True) if r["kind"] == "off"]
    return fitting.thresholds(pos, off)


auc = fitting.auc


def rates(rows: list[dict[str, Any]], outcome: Sequence[str]) -> dict[str, Any]:
    """Per kind (and per source of the off-domain): count, share answered without caution, with a caution,
    refused."""
    out: dict[str, Any] = {}
    groups: dict[str, list[str]] = {}
    for r, o in zip(rows, outcome, strict=True):
        groups.setdefault(r["kind"], []).append(o)
        if r["kind"] in ("off", "near"):
            groups.setdefault(f"{r['kind']}:{r['source']}->{r['target'].split('-')[0]}", []).append(o)
        if r["kind"] == "near" and r.get("answer_in_top3") is not None:
            # the labels' noise: another article of the collection may state the answer
            held = "answer in the top 3" if r["answer_in_top3"] else "answer not in the top 3"
            groups.setdefault(f"near:piaf, {held}", []).append(o)
    for key, got in sorted(groups.items()):
        n = len(got)
        out[key] = {"n": n, **{k: round(sum(o == k for o in got) / n, 4) for k in ("answer", "caution", "refuse")}}
    return out


def evaluate(rows: list[dict[str, Any]], c: float = 1.0) -> tuple[dict[str, Any], dict[str, Any]]:
    """(report, shipped coefficients file)."""
    by_side = {s: [r for r in rows if r["side"] == s] for s in ("fit", "dev", "test")}
    model = fit(by_side["fit"], c)
    doc = {"embedding_model": EMBEDDER, "features": list(FEATURES), "model": model, "thresholds": {}}
    gate = from_json({**doc, "thresholds": {"answer_at": 1.0, "caution_at": 0.0}}, "fit")
    p = {s: [gate.probability(r["features"]) for r in rs] for s, rs in by_side.items()}
    doc["thresholds"] = thresholds(by_side["dev"], p["dev"])
    gate = from_json(doc, "fit")
    report: dict[str, Any] = {"thresholds": doc["thresholds"], "sides": {}}
    for side, rs in by_side.items():
        new = [gate.decide(r["features"])[0] for r in rs]
        old = [r["rank_gate"] for r in rs]
        pos = [pi for r, pi in zip(rs, p[side], strict=True) if r["kind"] == "answerable"]
        neg = [pi for r, pi in zip(rs, p[side], strict=True) if r["kind"] in ("near", "off")]
        rrf_pos = [r["features"]["rrf1"] for r in rs if r["kind"] == "answerable"]
        rrf_neg = [r["features"]["rrf1"] for r in rs if r["kind"] in ("near", "off")]
        report["sides"][side] = {"evidence": rates(rs, new), "rank": rates(rs, old),
                                 "auc": {"evidence": auc(pos, neg), "rrf1": auc(rrf_pos, rrf_neg)}}
    doc["fitted"] = {"tool": "python -m ragfr_tools.eval.gate_fit", "date": time.strftime("%Y-%m-%d"),
                     "on": "PIAF fit-side articles (sha256(title) mod 10 >= 4) asked of PIAF, of PIAF without "
                           "their article, of golden; golden + eval/gate/unanswerable.jsonl fit-side questions",
                     "thresholds_on": "dev side (PIAF articles mod 10 in 2-3, golden/unanswerable ids likewise)",
                     "test": report["sides"]["test"]["evidence"]}
    return report, doc


def goals(test: dict[str, Any]) -> dict[str, Any]:
    a, off = test["answerable"], test["off"]
    return {"answerable_not_refused>=0.97": 1 - a["refuse"] >= 0.97, "answerable_answered>=0.90": a["answer"] >= 0.90,
            "off_refused>=0.90": off["refuse"] >= 0.90, "off_answered<=0.03": off["answer"] <= 0.03}


def table(report: dict[str, Any]) -> str:
    t = report["sides"]["test"]
    lines = ["| test questions (kind) | n | rank rule: answers / refuses | evidence gate: answers / "
             "cautions / refuses |", "|---|---:|---:|---:|"]
    for key in sorted(t["evidence"]):
        e, r = t["evidence"][key], t["rank"][key]
        lines.append(f"| {key} | {e['n']} | {r['answer']:.1%} / {r['refuse']:.1%} | "
                     f"{e['answer']:.1%} / {e['caution']:.1%} / {e['refuse']:.1%} |")
    return "\n".join(lines)


def _per_side(text: str) -> dict[str, int]:
    try:
        got = {k.strip(): int(v) for k, v in (part.split("=", 1) for part in text.split(","))}
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected fit=N,dev=N,test=N, got {text!r}") from None
    if set(got) != set(PER_SIDE) or min(got.values()) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive count for each of fit, dev, test, got {text!r}")
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn")
    ap.add_argument("--piaf", type=Path, default=REPO.parent / "shared" / "datasets" / "piaf" / "piaf-v1.1.json")
    ap.add_argument("--rows", type=Path, default=Path(".state/gatefit/rows.jsonl"))
    ap.add_argument("--reuse", action="store_true", help="read --rows instead of searching")
    ap.add_argument("--piaf-articles-in", metavar="COLLECTION",
                    help="restrict PIAF to the articles this (partly ingested) collection holds whole")
    ap.add_argument("--per-side", type=_per_side, default=PER_SIDE, metavar="fit=N,dev=N,test=N",
                    help="PIAF questions sampled per side (default: "
                         + ",".join(f"{k}={v}" for k, v in PER_SIDE.items()) + ")")
    ap.add_argument("--C", type=float, default=1.0, help="inverse L2 strength")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--no-write-model", action="store_true")
    args = ap.parse_args(argv)
    started = time.monotonic()
    if args.reuse:
        rows = read_rows(args.rows)
    elif args.dsn:
        rows = collect(args.dsn, args.piaf, args.rows, args.per_side, articles_from=args.piaf_articles_in)
    else:
        ap.error("--dsn (to search) or --reuse (a collected --rows file)")
    report, doc = evaluate(rows, args.C)
    command = "python -m ragfr_tools.eval.gate_fit " + " ".join(argv if argv is not None else sys.argv[1:])
    doc["fitted"].update(command=command.replace(args.dsn or "\0", "DSN"),
                         piaf_articles_in=args.piaf_articles_in, questions_per_side=args.per_side)
    report["command"] = doc["fitted"]["command"]
    report.update(goals=goals(report["sides"]["test"]["evidence"]), rows=str(args.rows),
                  embedding_model=EMBEDDER, per_side=args.per_side, model=doc["model"],
                  wall_seconds=round(time.monotonic() - started, 1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    if not args.no_write_model:
        MODELS.mkdir(exist_ok=True)
        (MODELS / f"{slug(EMBEDDER)}.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    print(table(report))
    print(f"gate_fit: thresholds {report['thresholds']}; AUC test {report['sides']['test']['auc']}")
    print(f"gate_fit: goals {report['goals']}; {args.out}; wall {report['wall_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
