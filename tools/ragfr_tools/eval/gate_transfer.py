"""A gate fitted with one embedding model and on some corpora, tested with another model and on corpora it never
saw (issue 47 item 2), from the rows ragfr_tools.eval.gate_corpora wrote (no search here).

The shipped gate reads cosines on e5's scale, so it cannot hold for another model. What can: every feature
that is not a cosine is already model-free (ranks, idf shares, BM25), and the cosines are read against the
collection itself, on the scale of the 30 everyday probe questions gate_corpora asks of each collection
(eval/gate/probes.jsonl): zcos = (cos - probes' mean cos1) / probes' sd of cos1, margins / that sd. Two more
features are the subject rule's (ragfr.analysis.subject): a subject no passage holds, a subject none of the
top passages holds.

Fitted with the product's fit (ragfr.gate.fitting: L2 logistic regression, classes balanced) on the FIT
model's rows of the FIT corpora (answerable = 1; off and near-topic = 0), halves by question hash: one half
fits, the other chooses the thresholds with the product's rule (fitting.thresholds, off-domain negatives);
then every other corpus and the other model are decided with those coefficients, unchanged.

    python -m ragfr_tools.eval.gate_transfer --fit-rows .state/gatecorpora/multilingual-e5-small.rows.jsonl \
        --test-rows .state/gatecorpora/use-multilingual.rows.jsonl --fit-corpora piaf-sport
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragfr.gate import fitting
from ragfr_tools.eval.gate_corpora import GOALS, absence_of, say, with_subject
from ragfr_tools.eval.gate_corpora import read_rows as _read_rows
from ragfr_tools.repo import REPO

MODEL_FREE = ("bm25_rel", "bm25_margin", "idf_cover1", "idf_cover3", "rare_cover3", "absent_idf", "agree_sem_in_lex",
              "agree_lex_in_sem", "overlap5", "rrf1", "n_terms")
RELATIVE = ("zcos1", "zcos3", "zcos_margin", "zcos_spread")
SUBJECT = ("subject_absent_collection", "subject_absent_top")
VARIANTS = {"model-free": MODEL_FREE, "relative": MODEL_FREE + RELATIVE,
            "relative+subject": MODEL_FREE + RELATIVE + SUBJECT}
NEGATIVE = ("off", "near-topic")  # fitted as unanswerable; near-hand and near-unans are only tested


def read_rows(path: Path) -> list[dict[str, Any]]:
    rows = _read_rows(path)
    for r in rows:
        r["absent"] = absence_of(r)
    return rows


def probe_scales(rows: Sequence[Mapping[str, Any]]) -> dict[str, tuple[float, float]]:
    """collection key -> (mean, sd) of the probes' cos1 there."""
    by: dict[str, list[float]] = {}
    for r in rows:
        if r["kind"] == "probe":
            by.setdefault(r["target"], []).append(float(r["features"].get("cos1", 0.0)))
    return {k: (statistics.fmean(v), statistics.pstdev(v) or 1e-6) for k, v in by.items()}


def relative(row: Mapping[str, Any], scales: Mapping[str, tuple[float, float]]) -> dict[str, float]:
    f = dict(row["features"])
    mean, sd = scales[row["target"]]
    absent = row.get("absent") or {}
    f.update(zcos1=(f.get("cos1", 0.0) - mean) / sd, zcos3=(f.get("cos3", 0.0) - mean) / sd,
             zcos_margin=f.get("cos_margin", 0.0) / sd, zcos_spread=f.get("cos_spread", 0.0) / sd,
             subject_absent_collection=float(absent.get("where") == "collection"),
             subject_absent_top=float(absent.get("where") == "top"))
    return f


def half(row: Mapping[str, Any]) -> str:
    h = int(hashlib.sha256(f"{row['corpus']}/{row['qid']}/{row['text']}".encode()).hexdigest()[:8], 16)
    return "fit" if h % 2 == 0 else "dev"


class Gate:
    def __init__(self, names: Sequence[str], model: Mapping[str, Any], th: Mapping[str, float]) -> None:
        self.names, self.model, self.th = tuple(names), model, th

    def p(self, f: Mapping[str, float]) -> float:
        import math

        z = self.model["intercept"] + sum(c * (float(f.get(n, 0.0)) - m) / s for n, m, s, c in zip(
            self.names, self.model["mean"], self.model["scale"], self.model["coef"], strict=True))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def decide(self, f: Mapping[str, float]) -> str:
        p = self.p(f)
        return "answer" if p >= self.th["answer_at"] else "caution" if p >= self.th["caution_at"] else "refuse"


def train(rows: Sequence[Mapping[str, Any]], scales: Mapping[str, tuple[float, float]], names: Sequence[str],
          corpora: Sequence[str], c: float = 1.0) -> Gate:
    use = [r for r in rows if r["corpus"] in corpora and r["kind"] in ("answerable", *NEGATIVE)]
    fit_rows = [r for r in use if half(r) == "fit"]
    dev_rows = [r for r in use if half(r) == "dev"]
    model = fitting.fit([relative(r, scales) for r in fit_rows], [r["kind"] == "answerable" for r in fit_rows], c,
                        names=names)
    gate = Gate(names, model, {"answer_at": 1.0, "caution_at": 0.0})
    pos = [gate.p(relative(r, scales)) for r in dev_rows if r["kind"] == "answerable"]
    neg = [gate.p(relative(r, scales)) for r in dev_rows if r["kind"] == "off"]
    return Gate(names, model, fitting.thresholds(pos, neg))


def rates(rows: Sequence[Mapping[str, Any]], scales: Mapping[str, tuple[float, float]], gates: Mapping[str, Gate],
          skip: set[tuple[str, str, str]]) -> dict[str, Any]:
    """corpus -> kind -> gate name -> shares (rows a gate was fitted or thresholded on are left out of it)."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for r in rows:
        if r["kind"] in ("probe", "miss"):
            continue
        f = relative(r, scales)
        key = (r["corpus"], r["qid"], r["text"])
        for name, g in gates.items():
            if key in skip:
                continue
            d = g.decide(f)
            for corpus in (r["corpus"], "all-unseen"):
                groups.setdefault((corpus, r["kind"], name), []).append(d)
                groups.setdefault((corpus, r["kind"], name + "+strong"), []).append(
                    with_subject(d, r["absent"], strong_only=True))
    out: dict[str, Any] = {}
    for (corpus, kind, name), ds in sorted(groups.items()):
        out.setdefault(corpus, {}).setdefault(kind, {})[name] = fitting.shares(ds)
    return out


def errors(rows: Sequence[Mapping[str, Any]], scales: Mapping[str, tuple[float, float]], gate: Gate,
           skip: set[tuple[str, str, str]], limit: int = 10) -> dict[str, list[dict[str, Any]]]:
    """The first `limit` errors of each kind under `gate` + the strong subject rule: answerable not answered,
    the rest answered without caution."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["kind"] in ("probe", "miss") or (r["corpus"], r["qid"], r["text"]) in skip:
            continue
        f = relative(r, scales)
        d = with_subject(gate.decide(f), r["absent"], strong_only=True)
        if (r["kind"] == "answerable") == (d == "answer"):
            continue
        got = out.setdefault(f"{r['kind']}:{d}", [])
        if len(got) < limit:
            got.append({"corpus": r["corpus"], "text": r["text"], "p": round(gate.p(f), 3),
                        "absent": (r["absent"] or {}).get("subject"), "top": r["top"][:100]})
    return out


def goals(rep: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for corpus, kinds in rep.items():
        for kind, want in GOALS.items():
            for gate, s in kinds.get(kind, {}).items():
                ok = all((s[k] >= v) if op == ">=" else (s[k] <= v) for k, (op, v) in want.items())
                out.setdefault(corpus, {}).setdefault(gate, {})[kind] = ok
    return out


def table(rep: Mapping[str, Any], gates: Sequence[str]) -> str:
    lines = ["| corpus | kind | n | " + " | ".join(f"{g} % ans / caut / ref" for g in gates) + " |",
             "|" + "---|" * (3 + len(gates))]
    for corpus, kinds in rep.items():
        for kind, by in kinds.items():
            n = next(iter(by.values()))["n"]
            cells = [f"{100 * by[g]['answer']:.1f} / {100 * by[g]['caution']:.1f} / {100 * by[g]['refuse']:.1f}"
                     if g in by else "" for g in gates]
            lines.append(f"| {corpus} | {kind} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fit-rows", type=Path, required=True, help="gate_corpora rows of the model fitted on")
    ap.add_argument("--test-rows", type=Path, action="append", default=[],
                    help="gate_corpora rows of another model (repeatable)")
    ap.add_argument("--fit-corpora", default="piaf-sport", help="comma-separated corpus keys fitted on")
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "bench" / "gate-corpora-transfer.json")
    args = ap.parse_args(argv)
    started = time.monotonic()
    corpora = [c.strip() for c in args.fit_corpora.split(",") if c.strip()]
    fit_rows = read_rows(args.fit_rows)
    fit_scales = probe_scales(fit_rows)
    gates = {name: train(fit_rows, fit_scales, names, corpora, args.C) for name, names in VARIANTS.items()}
    seen = {(r["corpus"], r["qid"], r["text"]) for r in fit_rows if r["corpus"] in corpora}
    doc: dict[str, Any] = {"command": "python -m ragfr_tools.eval.gate_transfer " + " ".join(
        argv if argv is not None else sys.argv[1:]), "date": time.strftime("%Y-%m-%d"), "fit_corpora": corpora,
        "gates": {n: {"features": list(g.names), "model": g.model, "thresholds": g.th} for n, g in gates.items()},
        "results": {}}
    names = [n for v in VARIANTS for n in (v, v + "+strong")]
    for path in [args.fit_rows, *args.test_rows]:
        rows = fit_rows if path == args.fit_rows else read_rows(path)
        # the fit corpora's questions are left out everywhere (the other model asks the same questions)
        rep = rates(rows, probe_scales(rows), gates, skip=seen)
        doc["results"][path.name] = {"report": rep, "goals": goals(rep), "errors_relative+strong": errors(
            rows, probe_scales(rows), gates["relative"], seen)}
        print(f"## {path.name} (fitted on {args.fit_rows.name}, corpora {corpora}; those questions left out)")
        print(table(rep, names))
    doc["wall_seconds"] = round(time.monotonic() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    say(f"transfer report {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
