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

Usage:
  python -m ragfr_tools.eval.gate_anymodel [--dsn DSN]   # DSN: completes rows' document frequencies for the
                                                         # current subject rule (gate_corpora --reuse --dsn)
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
from ragfr.gate.fitted import FittedGate, from_json
from ragfr_tools.eval import gate_corpora as corpora
from ragfr_tools.repo import REPO

MODEL_FREE = tuple(f for f in FEATURES if not f.startswith("cos"))
ANY_MODEL = "*"  # the embedding_model field of the file: every model without a gate of its own
STATE = REPO / ".state" / "gatecorpora"
OUT_MODEL = REPO / "src" / "ragfr" / "gate" / "models" / "any-model.json"
OUT = REPO / "docs" / "bench" / "gate-anymodel.json"
DEV_SHARE = 0.3
NEGATIVE = ("off", "near-topic", "near-hand")
HELD_OUT = ("piaf-arts", "piaf-societe")
E5, USE = "local:multilingual-e5-small", "local:use-multilingual"
# (name, rows file, the model its rows were searched with, the corpora kept; None: all)
SETS = (("e5, fit corpora (fit + dev)", "multilingual-e5-small.rows.jsonl", E5, None),
        ("USE, fit corpora (model unseen)", "use-multilingual.rows.jsonl", USE, None),
        ("e5, Arts + Société (corpora unseen)", "multilingual-e5-small.heldout.rows.jsonl", E5, HELD_OUT),
        ("USE, Arts + Société (model and corpora unseen)", "use-multilingual.heldout.rows.jsonl", USE, HELD_OUT))


def load_rows(path: Path, model: str, dsn: str | None, keep: Sequence[str] | None) -> list[dict[str, Any]]:
    rows = [r for r in corpora.read_rows(path) if r["kind"] != "probe" and (keep is None or r["corpus"] in keep)]
    if dsn:
        corpora.complete_df(rows, dsn, model)
    for r in rows:
        r["absent"] = corpora.absence_of(r)
    return rows


def split(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    labelled = [r for r in rows if r["kind"] == "answerable" or r["kind"] in NEGATIVE]
    dev = [r for r in labelled if fitting.side_of(f"{r['corpus']}|{r['text']}", DEV_SHARE, 0.0) == "dev"]
    return [r for r in labelled if r not in dev], dev


def strong_absence(row: dict[str, Any]) -> bool:
    return bool(row["absent"] and row["absent"].get("strong"))


def calibration(fit_rows: list[dict[str, Any]], dev_rows: list[dict[str, Any]], c: float) -> dict[str, Any]:
    """The any-model file: fitted on MODEL_FREE, written over FEATURES with the cosines at weight 0."""
    m = fitting.fit([r["features"] for r in fit_rows], [r["kind"] == "answerable" for r in fit_rows], c=c,
                    names=MODEL_FREE)
    by_name = {n: (m["mean"][i], m["scale"][i], m["coef"][i]) for i, n in enumerate(MODEL_FREE)}
    full = [by_name.get(n, (0.0, 1.0, 0.0)) for n in FEATURES]
    model = {**m, "mean": [f[0] for f in full], "scale": [f[1] for f in full], "coef": [f[2] for f in full]}
    gate = from_json({"embedding_model": ANY_MODEL, "features": list(FEATURES), "model": model,
                      "thresholds": {"answer_at": 1.0, "caution_at": 0.0}}, "fit")
    # The thresholds are chosen for the decision as it ships, the subject rule included: a question whose
    # subject no document names is never answered without caution, whatever p says, so such a negative
    # cannot be "answered" and does not hold the answer threshold up (it counts as p = 0 there).
    pos = [gate.probability(r["features"]) for r in dev_rows if r["kind"] == "answerable"]
    neg = [0.0 if strong_absence(r) else gate.probability(r["features"]) for r in dev_rows
           if r["kind"] != "answerable"]
    th = fitting.thresholds(pos, neg)
    return {"model": model, "thresholds": th}


def outcomes(gate: FittedGate, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
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
    ap.add_argument("--out-model", type=Path, default=OUT_MODEL)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--no-write-model", action="store_true")
    args = ap.parse_args(argv)
    started = time.monotonic()
    databases = {E5: "h2_gate_e5", USE: "h2_gate_use"}
    loaded = {name: load_rows(args.rows_dir / file, model,
                              f"{args.dsn.rstrip('/')}/{databases[model]}" if args.dsn else None, keep)
              for name, file, model, keep in SETS}
    fit_rows, dev_rows = split(loaded[SETS[0][0]])
    cal = calibration(fit_rows, dev_rows, args.C)
    command = "python -m ragfr_tools.eval.gate_anymodel" + (" --dsn DSN" if args.dsn else "")
    doc = {"embedding_model": ANY_MODEL, "features": list(FEATURES), **cal,
           "fitted": {"command": command, "date": time.strftime("%Y-%m-%d"),
                      "on": f"{E5} searches of PIAF Religion, Sport, Sciences and the golden contracts "
                            "(gate_corpora rows): answerable vs off-domain and near-domain; cosine features "
                            f"at weight 0; thresholds on the {int(DEV_SHARE * 100)} % dev side, for the decision "
                            "with the subject rule",
                      "rows": {"fit": len(fit_rows), "dev": len(dev_rows)}}}
    gate = from_json(doc, "fit")
    report = {name: outcomes(gate, rows) for name, rows in loaded.items()}
    if not args.no_write_model:
        args.out_model.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"command": command, "date": doc["fitted"]["date"], "model_file":
                                    str(args.out_model.relative_to(REPO)), "thresholds": cal["thresholds"],
                                    "report": report, "wall_seconds": round(time.monotonic() - started, 1)},
                                   indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    print(table(report))
    print(f"thresholds: answer at p >= {cal['thresholds']['answer_at']:.3f}, caution at p >= "
          f"{cal['thresholds']['caution_at']:.3f}; {len(fit_rows)} fit rows, {len(dev_rows)} dev rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
