"""Fit the model-free evidence gate (src/ragfr/gate/models/any-model.json) and measure it on an embedding model
and on corpora it never saw (issue 47 item 2: "the chart's bge-m3 gets it by default instead of the rank rule").

Why model-free: a cosine is read on its embedding model's own scale (30 everyday probe questions' best cosine
averages 0.81 with e5-small, 0.14 with USE, over the gate-corpora collections), so coefficients over cosines
fitted with one model mean nothing for another. The other features are
read on scales no model sets: BM25 relative to the question's own best, the question's words the top passages
hold (idf-weighted), the arms' agreement and the fused rank score normalised by the number of arms. A gate over
those alone, fitted with one model, can be tested with another. The cosine features keep their place in the
feature list (so one calibration format serves every gate) with weight 0.

What it is fitted on and tested with (the rows `python -m ragfr_tools.eval.gate_corpora` writes; both corpora
sets and models are named in its doc):
  fit + dev   rows searched with local:multilingual-e5-small in PIAF Religion, Sport and Sciences and the golden
              contracts (their topic-removed versions included): answerable (right passage in the fused top 3)
              positive; off-domain, near-domain topic-removed and hand-written negative. A hash of the question
              puts 30 % on the dev side, where the thresholds are chosen (ragfr.gate.fitting.thresholds) for
              the decision as it ships: a negative the subject rule already keeps from an unqualified answer
              (a strong absence) does not hold the answer threshold up.
  test        the same searches made with local:use-multilingual (a model no fit saw), and PIAF Arts and
              Société (corpora no fit saw) with both models.
The subject rule (ragfr.gate.rank.with_subject) is applied on top, as the product does.

Ceiling: for every set, the best its p can do against the goals of issue 47 item 3 with thresholds chosen on
that set's own rows, an oracle no deployment has (`ceiling`): if even that misses a goal, no threshold
will meet it and a stronger signal is needed, not another fit of these features.

--cosines probe (an experiment, never written to the package: the product keeps no probe statistics): the
cosines read against each collection's own scale, its 30 everyday probe questions' best cosine
(ragfr_tools.eval.gate_transfer's zcos features), beside the model-free ones; fitted and thresholded the
same way, measured on the same sets.

Usage:
  python -m ragfr_tools.eval.gate_anymodel [--dsn DSN]   # DSN: completes rows' document frequencies for the
                                                         # current subject rule (gate_corpora --reuse --dsn)
  python -m ragfr_tools.eval.gate_anymodel --dsn DSN --cosines probe   # -> docs/bench/gate-anymodel-probe.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragfr.gate import fitted, fitting
from ragfr.gate.features import FEATURES
from ragfr.gate.fitted import FittedGate, from_json
from ragfr_tools.eval import gate_corpora as corpora
from ragfr_tools.eval import gate_transfer as transfer
from ragfr_tools.repo import REPO

MODEL_FREE = tuple(f for f in FEATURES if not f.startswith("cos"))
ANY_MODEL = "*"  # the embedding_model field of the file: every model without a gate of its own
STATE = REPO / ".state" / "gatecorpora"
OUT_MODEL = REPO / "src" / "ragfr" / "gate" / "models" / "any-model.json"
OUT = REPO / "docs" / "bench" / "gate-anymodel.json"
OUT_PROBE = REPO / "docs" / "bench" / "gate-anymodel-probe.json"
DEV_SHARE = 0.3
NEGATIVE = ("off", "near-topic", "near-hand")
HELD_OUT = ("piaf-arts", "piaf-societe")
E5, USE = "local:multilingual-e5-small", "local:use-multilingual"
# (name, rows file, the model its rows were searched with, the corpora kept; None: all)
SETS = (("e5, fit corpora (fit + dev)", "multilingual-e5-small.rows.jsonl", E5, None),
        ("USE, fit corpora (model unseen)", "use-multilingual.rows.jsonl", USE, None),
        ("e5, Arts + Société (corpora unseen)", "multilingual-e5-small.heldout.rows.jsonl", E5, HELD_OUT),
        ("USE, Arts + Société (model and corpora unseen)", "use-multilingual.heldout.rows.jsonl", USE, HELD_OUT))


def load_rows(path: Path, model: str, dsn: str | None, keep: Sequence[str] | None,
              probe_cosines: bool = False) -> list[dict[str, Any]]:
    """The labelled searches of `path` (probes left out); `probe_cosines`: their features gain the cosines read
    on their collection's probe scale (transfer.RELATIVE)."""
    every = corpora.read_rows(path)
    rows = [r for r in every if r["kind"] != "probe" and (keep is None or r["corpus"] in keep)]
    if dsn:
        corpora.complete_df(rows, dsn, model)
    scales = transfer.probe_scales(every) if probe_cosines else {}
    for r in rows:
        r["absent"] = corpora.absence_of(r)
        if probe_cosines:
            r["features"] = transfer.relative(r, scales)
    return rows


def split(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    labelled = [r for r in rows if r["kind"] == "answerable" or r["kind"] in NEGATIVE]
    dev = [r for r in labelled if fitting.side_of(f"{r['corpus']}|{r['text']}", DEV_SHARE, 0.0) == "dev"]
    return [r for r in labelled if r not in dev], dev


def strong_absence(row: dict[str, Any]) -> bool:
    return bool(row["absent"] and row["absent"].get("strong"))


def dev_thresholds(p: Callable[[Mapping[str, float]], float], dev_rows: list[dict[str, Any]]) -> dict[str, float]:
    """The thresholds for the decision as it ships, the subject rule included: a question whose subject no
    document names is never answered without caution, whatever p says, so such a negative cannot be
    "answered" and does not hold the answer threshold up (it counts as p = 0 there)."""
    pos = [p(r["features"]) for r in dev_rows if r["kind"] == "answerable"]
    neg = [0.0 if strong_absence(r) else p(r["features"]) for r in dev_rows if r["kind"] != "answerable"]
    return fitting.thresholds(pos, neg)


def calibration(fit_rows: list[dict[str, Any]], dev_rows: list[dict[str, Any]], c: float) -> dict[str, Any]:
    """The any-model file: fitted on MODEL_FREE, written over FEATURES with the cosines at weight 0."""
    m = fitting.fit([r["features"] for r in fit_rows], [r["kind"] == "answerable" for r in fit_rows], c=c,
                    names=MODEL_FREE)
    by_name = {n: (m["mean"][i], m["scale"][i], m["coef"][i]) for i, n in enumerate(MODEL_FREE)}
    full = [by_name.get(n, (0.0, 1.0, 0.0)) for n in FEATURES]
    model = {**m, "mean": [f[0] for f in full], "scale": [f[1] for f in full], "coef": [f[2] for f in full]}
    gate = from_json({"embedding_model": ANY_MODEL, "features": list(FEATURES), "model": model,
                      "thresholds": {"answer_at": 1.0, "caution_at": 0.0}}, "fit")
    return {"model": model, "thresholds": dev_thresholds(gate.probability, dev_rows)}


class ProbeGate:
    """The --cosines probe experiment read like a FittedGate (probability, decide): the model-free features
    and transfer.RELATIVE, fitted and thresholded as `calibration` does."""

    NAMES = (*MODEL_FREE, *transfer.RELATIVE)

    def __init__(self, fit_rows: list[dict[str, Any]], dev_rows: list[dict[str, Any]], c: float) -> None:
        model = fitting.fit([r["features"] for r in fit_rows], [r["kind"] == "answerable" for r in fit_rows], c=c,
                            names=self.NAMES)
        unthresholded = transfer.Gate(self.NAMES, model, {"answer_at": 1.0, "caution_at": 0.0})
        self.thresholds = dev_thresholds(unthresholded.p, dev_rows)
        self.gate = transfer.Gate(self.NAMES, model, self.thresholds)

    def probability(self, features: Mapping[str, float]) -> float:
        return self.gate.p(features)

    def decide(self, features: Mapping[str, float]) -> tuple[str]:
        return (self.gate.decide(features),)


def ceiling(p: Callable[[Mapping[str, float]], float], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The best thresholds chosen on `rows` themselves can do (`gate`: p alone; `gate+strong`: with the strong
    subject rule as it ships, which refuses a question whose subject no passage holds unless p answers it, and
    then cautions it):
      answer_3: the lowest answer threshold that answers at most 3 % of the off-domain questions, and the
                answerable share it answers without caution (goal: >= 90 %);
      refuse_2: with that answer threshold, the highest caution threshold that refuses at most 2 % of the
                answerable questions, and the off-domain share it refuses (goal: >= 90 %); None when none does.
    `answerable` / `answerable_strong`: how many answerable questions, and how many of them name a subject no
    passage of the collection holds (what the rule refuses unless p answers it)."""
    def scored(kind: str) -> tuple[np.ndarray, np.ndarray]:
        mine = [r for r in rows if r["kind"] == kind]
        return (np.array([p(r["features"]) for r in mine]), np.array([strong_absence(r) for r in mine], dtype=bool))
    ans, off = scored("answerable"), scored("off")
    if not len(ans[0]) or not len(off[0]):
        return {}
    never = float(np.nextafter(1.0, 2.0))
    cuts = np.unique(np.concatenate([ans[0], off[0], [0.0, never]]))
    out: dict[str, Any] = {"answerable": int(len(ans[0])), "answerable_strong": int(ans[1].sum())}
    for rule in ("gate", "gate+strong"):
        rule_on = rule == "gate+strong"
        a = float(min(cut for cut in cuts if _answered(off, cut, rule_on) <= 0.03))  # `never` always qualifies
        c_ok = [float(c) for c in cuts if c <= a and _refused(ans, c, a, rule_on) <= 0.02]
        out[rule] = {
            "answer_3": {"answer_at": a, "answerable_answered": round(_answered(ans, a, rule_on), 4)},
            "refuse_2": {"caution_at": max(c_ok), "off_refused": round(_refused(off, max(c_ok), a, rule_on), 4)}
            if c_ok else None}
    return out


def _answered(scored: tuple[np.ndarray, np.ndarray], answer_at: float, rule_on: bool) -> float:
    """Share answered without caution: p at or above `answer_at` and (with the rule) no strong absence."""
    p, strong = scored
    return float(np.mean((p >= answer_at) & ~(strong & rule_on)))


def _refused(scored: tuple[np.ndarray, np.ndarray], caution_at: float, answer_at: float, rule_on: bool) -> float:
    """Share refused: p below `caution_at`, or (with the rule) a strong absence that p does not answer."""
    p, strong = scored
    return float(np.mean((p < caution_at) | (strong & rule_on & (p < answer_at))))


def ceiling_lines(report: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = []
    for name, best in report.items():
        if not best:
            continue
        lines.append(f"ceiling, {name}: {best['answerable_strong']} of {best['answerable']} answerable searches "
                     "name a subject no passage holds")
        for rule in ("gate", "gate+strong"):
            r2, a3 = best[rule]["refuse_2"], best[rule]["answer_3"]
            lines.append(f"ceiling, {name}, {rule}: answerable refused <= 2 % -> off-domain refused "
                         + (f"{100 * r2['off_refused']:.1f} %" if r2 else "never (the subject rule alone refuses more)")
                         + f"; off-domain answered <= 3 % -> answerable answered "
                           f"{100 * a3['answerable_answered']:.1f} %")
    return lines


def outcomes(gate: FittedGate | ProbeGate, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """kind -> {gate: shares} for the gate alone, with the subject rule, and the rank rule beside them."""
    out: dict[str, dict[str, Any]] = {}
    for kind in ("answerable", *NEGATIVE):
        mine = [r for r in rows if r["kind"] == kind]
        if not mine:
            continue
        base = [gate.decide(r["features"])[0] for r in mine]
        out[kind] = {
            "rank+strong": fitting.shares([corpora.with_subject(r["rank_gate"], r["absent"], True) for r in mine]),
            "any-model": fitting.shares(base),
            "any-model+strong": fitting.shares([corpora.with_subject(b, r["absent"], True)
                                                for b, r in zip(base, mine, strict=True)])}
    return out


def table(report: dict[str, dict[str, dict[str, Any]]]) -> str:
    gates = ("rank+strong", "any-model", "any-model+strong")
    lines = ["| rows | kind | n | " + " | ".join(f"{g} % ans / caut / ref" for g in gates) + " |",
             "|" + "---|" * (3 + len(gates))]
    for name, kinds in report.items():
        for kind, by_gate in kinds.items():
            cells = [f"{100 * s['answer']:.1f} / {100 * s['caution']:.1f} / {100 * s['refuse']:.1f}"
                     for s in (by_gate[g] for g in gates)]
            lines.append(f"| {name} | {kind} | {by_gate['any-model']['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", help="the databases gate_corpora searched, without the name: DSN/h2_gate_e5 and "
                                  "DSN/h2_gate_use are read (optional: rows already hold their questions' words)")
    ap.add_argument("--rows-dir", type=Path, default=STATE)
    ap.add_argument("--C", type=float, default=1.0, help="inverse L2 strength")
    ap.add_argument("--cosines", choices=("off", "probe"), default="off",
                    help="off: the shipped model-free gate (cosines at weight 0); probe: the experiment reading "
                         "them on each collection's probe scale (never written to the package)")
    ap.add_argument("--out-model", type=Path, default=OUT_MODEL)
    ap.add_argument("--out", type=Path, help=f"raw JSON (default {OUT.relative_to(REPO)}, "
                                             f"{OUT_PROBE.relative_to(REPO)} with --cosines probe)")
    ap.add_argument("--no-write-model", action="store_true")
    args = ap.parse_args(argv)
    probe = args.cosines == "probe"
    out = args.out or (OUT_PROBE if probe else OUT)
    started = time.monotonic()
    databases = {E5: "h2_gate_e5", USE: "h2_gate_use"}
    loaded = {name: load_rows(args.rows_dir / file, model,
                              f"{args.dsn.rstrip('/')}/{databases[model]}" if args.dsn else None, keep, probe)
              for name, file, model, keep in SETS}
    fit_rows, dev_rows = split(loaded[SETS[0][0]])
    command = ("python -m ragfr_tools.eval.gate_anymodel" + (" --dsn DSN" if args.dsn else "")
               + (" --cosines probe" if probe else ""))
    gate: FittedGate | ProbeGate
    if probe:
        gate = ProbeGate(fit_rows, dev_rows, args.C)
        thresholds = gate.thresholds
    else:
        cal = calibration(fit_rows, dev_rows, args.C)
        thresholds = cal["thresholds"]
        doc = {"embedding_model": ANY_MODEL, "features": list(FEATURES), **cal,
               "fitted": {"command": command, "date": time.strftime("%Y-%m-%d"),
                          "on": f"{E5} searches of PIAF Religion, Sport, Sciences and the golden contracts "
                                "(gate_corpora rows): answerable vs off-domain and near-domain; cosine features "
                                f"at weight 0; thresholds on the {int(DEV_SHARE * 100)} % dev side, for the "
                                "decision with the subject rule",
                          "rows": {"fit": len(fit_rows), "dev": len(dev_rows)}}}
        gate = from_json(doc, "fit")
        if not args.no_write_model:
            args.out_model.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    report = {name: outcomes(gate, rows) for name, rows in loaded.items()}
    best = {name: ceiling(gate.probability, rows) for name, rows in loaded.items()}
    # e5 keeps its own fitted gate in the product: its ceiling beside the model-free one's, on the same rows
    own = fitted.load(E5)
    if not probe and own is not None and own.embedding_model == E5:
        best.update({f"{name}, e5's own gate": ceiling(own.probability, loaded[name])
                     for name, _, model, _ in SETS if model == E5})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"command": command, "date": time.strftime("%Y-%m-%d"),
                               "model_file": None if probe else str(args.out_model.relative_to(REPO)),
                               "features": list(ProbeGate.NAMES if probe else MODEL_FREE),
                               "thresholds": thresholds, "report": report, "ceiling": best,
                               "wall_seconds": round(time.monotonic() - started, 1)},
                              indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    print(table(report))
    print("\n".join(ceiling_lines(best)))
    print(f"thresholds: answer at p >= {thresholds['answer_at']:.3f}, caution at p >= "
          f"{thresholds['caution_at']:.3f}; {len(fit_rows)} fit rows, {len(dev_rows)} dev rows", file=sys.stderr)
    return 0

if __name__ == "__main__":
    sys.exit(main())
