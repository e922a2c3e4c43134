"""Hybrid (RRF) alone vs hybrid + the trained cross-encoder, on the PIAF test split and the golden set.

Per question: ONE `ragfr.retrieval.hybrid.search` (production settings, k = rerank_top_n = 10, no reranker)
gives the candidate chunks; "hybrid" is their RRF order, "hybrid+ce" is the same chunks scored by
ragfr's own CrossEncoderReranker (the class `ragfr search --rerank` and the eval configuration load) and
sorted as hybrid.py sorts them (score descending, ties by id). Both are therefore scored on the same
candidates, and the scoring call is timed: that time is the reranking latency for 10 passages on
`threads` torch threads at the trained max_length (p50/p95 over the questions).

Documents are ranked by their best chunk (ragfr eval's rule); recall@3 (what the chat model receives),
MRR@10 and nDCG@10 against the qrels. The PIAF corpus is the WHOLE of PIAF (train paragraphs are
distractors too); only the test split's questions are asked.

    python -m ragfr_tools.reranker.evaluate --dsn DSN --piaf piaf-v1.1.json --model .state/reranker/model-X
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragfr.eval.beir import Dataset, load_dataset
from ragfr.eval.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from ragfr.eval.piaf import load_piaf
from ragfr_tools.reranker.data import EMBEDDER, sample_queries, split_dataset, split_hash
from ragfr_tools.reranker.hyper import HYPER, Hyper, hyper_hash

CONFIGS = ("hybrid", "hybrid+ce")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def metrics_of(ranking: list[str], judged: dict[str, int]) -> dict[str, float]:
    return {"recall@3": recall_at_k(ranking, judged, 3), "mrr@10": mrr_at_k(ranking, judged, 10),
            "ndcg@10": ndcg_at_k(ranking, judged, 10)}


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in rows[0]} if rows else {}


def run_suite(conn: Any, dataset: Dataset, questions: list[Any], embedder: Any, reranker: Any, h: Hyper,
              label: str) -> dict[str, Any]:
    from ragfr.eval.corpus import chunk_documents, documents_ranking, ensure_ingested
    from ragfr.filters.grammar import from_mapping
    from ragfr.ingest.chunking import ChunkConfig
    from ragfr.retrieval import hybrid
    from ragfr.retrieval.config import SearchConfig

    collection, _ = ensure_ingested(conn, dataset, embedder, ChunkConfig(), progress=False)
    chunk_to_doc = chunk_documents(conn, collection)
    conn.commit()
    config = SearchConfig().with_(rerank=False, k=h.rerank_top_n)
    vectors = embedder.embed_queries([q.text for q in questions])
    per: dict[str, list[dict[str, float]]] = {c: [] for c in CONFIGS}
    latency_ms: list[float] = []
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    for n, (q, vec) in enumerate(zip(questions, vectors, strict=True), 1):
        hits = hybrid.search(conn, q.text, collections=[collection], conditions=from_mapping(dict(q.filters)),
                             query_vector=vec, embedder=embedder, config=config).hits
        t0 = time.perf_counter()
        scores = reranker.score(q.text, [hit.text for hit in hits])
        latency_ms.append((time.perf_counter() - t0) * 1000)
        reranked = [hit for _, hit in sorted(zip(scores, hits, strict=True), key=lambda p: (-p[0], str(p[1].id)))]
        judged = dataset.qrels[q.id]
        base_docs = documents_ranking([str(x.id) for x in hits], chunk_to_doc)
        ce_docs = documents_ranking([str(x.id) for x in reranked], chunk_to_doc)
        per["hybrid"].append(metrics_of(base_docs, judged))
        per["hybrid+ce"].append(metrics_of(ce_docs, judged))
        rows.append({"qid": q.id, "hybrid": base_docs, "hybrid+ce": ce_docs, "scores": [round(s, 4) for s in scores],
                     "relevant": sorted(d for d, g in judged.items() if g > 0)})
        if n % 25 == 0 or n == len(questions):
            el = time.monotonic() - started
            print(f"evaluate[{label}]: {n}/{len(questions)} questions, elapsed {el:.0f} s, "
                  f"eta {el / n * (len(questions) - n):.0f} s", flush=True)
    return {
        "questions": len(questions), "collection": collection,
        "metrics": {c: mean(per[c]) for c in CONFIGS},
        "latency_ms_10_passages": {"p50": round(percentile(latency_ms, 0.5), 1),
                                   "p95": round(percentile(latency_ms, 0.95), 1),
                                   "mean": round(statistics.fmean(latency_ms), 1) if latency_ms else None},
        "per_query": rows,
    }


def markdown(result: dict[str, Any]) -> str:
    lines = ["| suite | questions | configuration | recall@3 | MRR@10 | nDCG@10 | rerank 10 passages p50 / p95 |",
             "|---|---:|---|---:|---:|---:|---:|"]
    for suite, r in result["suites"].items():
        lat = r["latency_ms_10_passages"]
        for c in CONFIGS:
            m = r["metrics"][c]
            cost = f"{lat['p50']:.0f} / {lat['p95']:.0f} ms" if c == "hybrid+ce" else "-"
            lines.append(f"| {suite} | {r['questions']} | {c} | {m['recall@3']:.3f} | {m['mrr@10']:.3f} | "
                         f"{m['ndcg@10']:.3f} | {cost} |")
    return "\n".join(lines)


@dataclass
class Setup:
    """What every measurement of a trained model starts from: the split, the sampled test questions, the
    embedder and the model, on the threads and seed of `h`."""
    full: Dataset
    train: Dataset
    test: Dataset
    questions: list[Any]
    embedder: Any
    reranker: Any


def setup(piaf: Path, model: Path, h: Hyper = HYPER) -> Setup:
    import torch

    from ragfr.embed import load_embedder
    from ragfr.retrieval.rerank import CrossEncoderReranker

    torch.manual_seed(h.seed)
    torch.set_num_threads(h.threads)
    full, train, test = split_dataset(load_piaf(piaf), h)
    return Setup(full, train, test, sample_queries(test, h.test_questions, h.seed), load_embedder(EMBEDDER),
                 CrossEncoderReranker(str(model), max_length=h.max_length, batch_size=h.rerank_top_n))


def evaluate(dsn: str, piaf: Path, model: Path, golden: Path, h: Hyper = HYPER) -> dict[str, Any]:
    import psycopg

    started = time.monotonic()
    st = setup(piaf, model, h)
    manifest = json.loads((model / "manifest.json").read_text())
    golden_ds = load_dataset(golden)
    golden_q = [golden_ds.queries[q] for q in sorted(golden_ds.queries)
                if any(g > 0 for g in golden_ds.qrels.get(q, {}).values())]
    with psycopg.connect(dsn) as conn:
        suites = {
            "piaf-test": run_suite(conn, st.full, st.questions, st.embedder, st.reranker, h, "piaf-test"),
            "golden": run_suite(conn, golden_ds, golden_q, st.embedder, st.reranker, h, "golden"),
        }
    return {
        "issue": 29, "model": str(model), "model_sha256": manifest.get("model_sha256"),
        "hyper": manifest.get("hyper"), "hyper_hash": manifest.get("hyper_hash"),
        "split_hash": split_hash(st.train, st.test),
        "split": {"train_articles_paragraphs": len(st.train.corpus), "test_paragraphs": len(st.test.corpus),
                  "test_questions": len(st.test.queries), "asked": len(st.questions),
                  "corpus_paragraphs": len(st.full.corpus)},
        "train_wall_seconds": manifest.get("wall_seconds"), "threads": h.threads,
        "suites": suites, "eval_wall_seconds": round(time.monotonic() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--piaf", type=Path, required=True)
    ap.add_argument("--model", type=Path, default=None, help="default: .state/reranker/model-<hyper hash>")
    ap.add_argument("--golden", type=Path, default=Path("eval/golden"))
    ap.add_argument("--out", type=Path, default=None, help="default: docs/bench/reranker-<hyper hash>.json")
    args = ap.parse_args(argv)
    model = args.model or Path(".state/reranker") / f"model-{hyper_hash()}"
    out = args.out or Path("docs/bench") / f"reranker-{hyper_hash()}.json"
    result = evaluate(args.dsn, args.piaf, model, args.golden)
    out.parent.mkdir(parents=True, exist_ok=True)
    slim = {**result, "suites": {k: {kk: vv for kk, vv in v.items() if kk != "per_query"}
                                 for k, v in result["suites"].items()}}
    out.write_text(json.dumps(slim, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    per_query = Path(".state/reranker") / f"eval-{hyper_hash()}.per-query.json"
    per_query.parent.mkdir(parents=True, exist_ok=True)
    per_query.write_text(json.dumps(result["suites"], ensure_ascii=False) + "\n")
    print(markdown(result))
    print(f"evaluate: {out} (per-query rankings in {per_query}); wall {result['eval_wall_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
