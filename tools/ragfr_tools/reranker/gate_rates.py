"""The evidence gate on PIAF's held-out articles: the RRF gate the chart ships, and the cross-encoder gate
calibrated on questions it is then NOT measured on (issue 29 item 4, principle 4).

1. Calibration (golden set): `gate_calibration.score_collection` on the golden collection, answerable side =
   golden questions whose document production retrieval puts in the top 3, unanswerable side =
   eval/gate/unanswerable.jsonl; the trained cross-encoder reranks the fused top 10 and the best logit
   threshold (Youden's J) becomes RAGFR_GATE_CE_EVIDENCE (its sigmoid: RAG_RELEVANCE_THRESHOLD).
2. Measurement (PIAF test split, never used to choose anything): the sampled test questions
   - asked of the WHOLE PIAF corpus: "answerable" when their paragraph's article is in the top 3 the chat
     model would receive (the fused top 3 for the RRF gate, the cross-encoder's top 3 for its gate); the
     gate should answer them;
   - asked of the collection of the TRAIN articles only (mining's, data.py), which does not hold their
     article: off-domain for that corpus; the gate should refuse them.
   Each gate decides with `ragfr.gate.rank.assess` (`decide` on the hits' scores), as `ragfr ask` does;
   the chat takes the same `decide`.

    python -m ragfr_tools.reranker.gate_rates --dsn DSN --piaf piaf-v1.1.json [--model DIR] [--out JSON]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from ragfr.eval.beir import Dataset, load_dataset
from ragfr.gate.rank import GateConfig, assess
from ragfr.retrieval.types import Hit
from ragfr_tools.repo import REPO
from ragfr_tools.reranker.evaluate import setup
from ragfr_tools.reranker.hyper import HYPER, Hyper, hyper_hash
from ragfr_tools.reranker.package import default_model


def calibrate(conn: Any, golden: Dataset, embedder: Any, reranker: Any) -> dict[str, Any]:
    from ragfr.eval.corpus import chunk_documents, ensure_ingested
    from ragfr.ingest.chunking import ChunkConfig
    from ragfr_tools.eval.gate_calibration import report, score_collection

    collection, _ = ensure_ingested(conn, golden, embedder, ChunkConfig(), progress=False)
    scored = score_collection(conn, collection, chunk_documents(conn, collection), golden,
                              REPO / "eval" / "gate" / "unanswerable.jsonl", embedder, reranker)
    out = report(scored)
    out.pop("scores")
    return out


def reranked(hits: list[Hit], scores: list[float]) -> list[Hit]:
    """hybrid.py's order for reranked hits: score descending, ties by id."""
    scored = [dataclasses.replace(h, rerank_score=s) for h, s in zip(hits, scores, strict=True)]
    return sorted(scored, key=lambda h: (-(h.rerank_score or 0.0), str(h.id)))


def measure(conn: Any, full: Dataset, train: Dataset, questions: list[Any], embedder: Any, reranker: Any,
            gates: dict[str, GateConfig], h: Hyper) -> dict[str, Any]:
    from ragfr.eval.corpus import chunk_documents, documents_ranking, ensure_ingested
    from ragfr.ingest.chunking import ChunkConfig
    from ragfr.retrieval import hybrid
    from ragfr.retrieval.config import SearchConfig

    whole, _ = ensure_ingested(conn, full, embedder, ChunkConfig(), progress=False)
    without, _ = ensure_ingested(conn, train, embedder, ChunkConfig(), progress=False)
    chunk_to_doc = chunk_documents(conn, whole)
    conn.commit()
    config = SearchConfig().with_(rerank=False, k=h.rerank_top_n)
    vectors = embedder.embed_queries([q.text for q in questions])
    tally = {g: {"answerable": 0, "answered": 0, "off_domain": 0, "refused": 0} for g in gates}
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    for n, (q, vec) in enumerate(zip(questions, vectors, strict=True), 1):
        row: dict[str, Any] = {"qid": q.id}
        for side, collection in (("in", whole), ("off", without)):
            hits = hybrid.search(conn, q.text, collections=[collection], query_vector=vec, embedder=embedder,
                                 config=config).hits
            ce = reranked(hits, reranker.score(q.text, [x.text for x in hits]))
            for name, gate in gates.items():
                order = ce if gate.scale == "cross-encoder" else hits
                evidence = assess(order, gate)
                grounded = evidence.grounded
                row[f"{name}:{side}"] = grounded
                row[f"{name}:{side}:top"] = evidence.top_score
                if side == "off":
                    tally[name]["off_domain"] += 1
                    tally[name]["refused"] += not grounded
                    continue
                top3 = documents_ranking([str(x.id) for x in order], chunk_to_doc)[:3]
                row[f"{name}:answerable"] = bool(set(top3) & {d for d, g in full.qrels[q.id].items() if g > 0})
                if row[f"{name}:answerable"]:
                    tally[name]["answerable"] += 1
                    tally[name]["answered"] += grounded
        rows.append(row)
        if n % 25 == 0 or n == len(questions):
            el = time.monotonic() - started
            print(f"gate_rates: {n}/{len(questions)} questions, elapsed {el:.0f} s, "
                  f"eta {el / n * (len(questions) - n):.0f} s", flush=True)
    rates = {g: {**t, "answered_rate": round(t["answered"] / max(t["answerable"], 1), 4),
                 "refused_rate": round(t["refused"] / max(t["off_domain"], 1), 4)} for g, t in tally.items()}
    ceilings = {**{g: ceiling(rows, g) for g in gates}, "rrf+cross-encoder": ceiling_two_scores(rows)}
    return {"rates": rates, "ceiling_on_test": ceilings, "per_query": rows}


def ceiling(rows: list[dict[str, Any]], gate: str) -> dict[str, Any]:
    """What ONE evidence threshold on this gate's top score could reach at best on these very questions: an
    upper bound, chosen on the test split itself, so never a calibration. Answered / refused rates of every
    distinct top score as threshold; the point maximising the worse of (answered - 0.95, refused - 0.90)."""
    pos = [r[f"{gate}:in:top"] for r in rows if r.get(f"{gate}:answerable") and r[f"{gate}:in:top"] is not None]
    neg = [r[f"{gate}:off:top"] for r in rows if r[f"{gate}:off:top"] is not None]
    best: dict[str, Any] = {}
    for t in sorted(set(pos) | set(neg)):
        answered = sum(v >= t for v in pos) / max(len(pos), 1)
        refused = sum(v < t for v in neg) / max(len(neg), 1)
        margin = min(answered - 0.95, refused - 0.90)
        if not best or margin > best["margin"]:
            best = {"threshold": t, "answered": round(answered, 4), "refused": round(refused, 4),
                    "margin": round(margin, 4)}
    return {**best, "meets_95_90": bool(best) and best["margin"] >= 0}


def ceiling_two_scores(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The same upper bound for rules that read BOTH top scores (the fused RRF one and the cross-encoder's),
    on the questions the cross-encoder's top 3 answers: answer when both pass ("and"), when either passes
    ("or"), or when w * z(rrf) + z(ce) passes (z: standardized on the answerable side), w on a grid."""
    pos = [(r["rrf:in:top"], r["cross-encoder:in:top"]) for r in rows if r.get("cross-encoder:answerable")]
    neg = [(r["rrf:off:top"], r["cross-encoder:off:top"]) for r in rows]
    if not pos or not neg:
        return {}

    def rated(rule: str, answer: Any) -> dict[str, Any]:
        answered = sum(map(answer, pos)) / len(pos)
        refused = 1 - sum(map(answer, neg)) / len(neg)
        return {"rule": rule, "answered": round(answered, 4), "refused": round(refused, 4),
                "margin": round(min(answered - 0.95, refused - 0.90), 4)}

    candidates: list[dict[str, Any]] = []
    rrf_values, ce_values = sorted({a for a, _ in pos + neg}), sorted({b for _, b in pos + neg})
    for a in rrf_values:
        for b in ce_values:
            candidates.append(rated(f"rrf >= {a:.6f} and ce >= {b:.6f}", lambda x, a=a, b=b: x[0] >= a and x[1] >= b))
            candidates.append(rated(f"rrf >= {a:.6f} or ce >= {b:.6f}", lambda x, a=a, b=b: x[0] >= a or x[1] >= b))
    mean = [sum(x[i] for x in pos) / len(pos) for i in (0, 1)]
    std = [max(1e-12, (sum((x[i] - mean[i]) ** 2 for x in pos) / len(pos)) ** 0.5) for i in (0, 1)]
    for w in (0.25, 0.5, 1.0, 2.0, 4.0):
        def z(x: tuple[float, float], w: float = w) -> float:
            return w * (x[0] - mean[0]) / std[0] + (x[1] - mean[1]) / std[1]
        for t in sorted({z(x) for x in pos + neg}):
            candidates.append(rated(f"{w} * z(rrf) + z(ce) >= {t:.6f}", lambda x, t=t, z=z: z(x) >= t))
    best = max(candidates, key=lambda c: c["margin"])
    return {**best, "meets_95_90": best["margin"] >= 0, "rules_tried": len(candidates)}


def run(dsn: str, piaf: Path, model: Path, golden_dir: Path, h: Hyper = HYPER) -> dict[str, Any]:
    import psycopg

    started = time.monotonic()
    st = setup(piaf, model, h)
    with psycopg.connect(dsn) as conn:
        calibration = calibrate(conn, load_dataset(golden_dir), st.embedder, st.reranker)
        evidence = calibration["cross_encoder_logit"]["best"]["threshold"]
        gates = {"rrf": GateConfig.for_scale("rrf"),
                 # the calibrated evidence threshold, the noise floor's built-in default (RAGFR_GATE_CE_NOISE)
                 "cross-encoder": GateConfig("cross-encoder", min(GateConfig.for_scale("cross-encoder").noise_floor,
                                                                  evidence), evidence)}
        measured = measure(conn, st.full, st.train, st.questions, st.embedder, st.reranker, gates, h)
    manifest = json.loads((model / "manifest.json").read_text())
    return {
        "issue": 29, "model": str(model), "model_sha256": manifest.get("model_sha256"),
        "hyper_hash": manifest.get("hyper_hash"), "questions": len(st.questions),
        "calibration_golden": calibration,
        "gates": {g: dataclasses.asdict(c) for g, c in gates.items()},
        **measured, "wall_seconds": round(time.monotonic() - started, 1),
    }


def ceilings_only(per_query: Path, out: Path) -> int:
    rows = json.loads(per_query.read_text())
    result = json.loads(out.read_text())
    result["ceiling_on_test"] = {**{g: ceiling(rows, g) for g in ("rrf", "cross-encoder")},
                                 "rrf+cross-encoder": ceiling_two_scores(rows)}
    out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    for gate, c in result["ceiling_on_test"].items():
        print(f"gate_rates: {gate}: the best rule ON THESE QUESTIONS (an upper bound): {json.dumps(c)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--piaf", type=Path, required=True)
    ap.add_argument("--model", type=Path, default=None, help="default: the default preset's trained model")
    ap.add_argument("--golden", type=Path, default=REPO / "eval" / "golden")
    ap.add_argument("--out", type=Path, default=None, help="default: docs/bench/reranker-gate-<hyper hash>.json")
    ap.add_argument("--ceilings-from", type=Path, default=None, metavar="PER_QUERY_JSON",
                    help="recompute only the upper bounds from a saved per-query file into --out's JSON")
    args = ap.parse_args(argv)
    if args.ceilings_from:
        return ceilings_only(args.ceilings_from, args.out or REPO / "docs" / "bench" /
                             f"reranker-gate-{hyper_hash()}.json")
    model = args.model or default_model()
    out = args.out or REPO / "docs" / "bench" / f"reranker-gate-{hyper_hash()}.json"
    result = run(args.dsn, args.piaf, model, args.golden)
    out.write_text(json.dumps({k: v for k, v in result.items() if k != "per_query"}, indent=2, sort_keys=True) + "\n")
    per_query = Path(".state/reranker") / f"gate-{hyper_hash()}.per-query.json"
    per_query.parent.mkdir(parents=True, exist_ok=True)
    per_query.write_text(json.dumps(result["per_query"]) + "\n")
    for gate, r in result["rates"].items():
        print(f"gate_rates: {gate}: answers {r['answered']}/{r['answerable']} ({r['answered_rate']:.1%}) of the "
              f"answerable, refuses {r['refused']}/{r['off_domain']} ({r['refused_rate']:.1%}) off-domain")
    print(f"gate_rates: calibration on golden: {json.dumps(result['calibration_golden'].get('settings'))}")
    for gate, c in result["ceiling_on_test"].items():
        print(f"gate_rates: {gate}: the best single threshold ON THESE QUESTIONS (an upper bound, not a "
              f"calibration): {json.dumps(c)}")
    print(f"gate_rates: {out}; wall {result['wall_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
