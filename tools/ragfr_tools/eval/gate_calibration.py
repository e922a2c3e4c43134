"""Calibrating the evidence gate: where should "not enough evidence" start?

Answerable side: the golden queries whose relevant document production retrieval puts in the top 3 (a
question the system cannot retrieve for should be refused, so it is not counted as a miss of the gate).
Unanswerable side: eval/gate/unanswerable.jsonl (off-domain and near-domain questions the corpus does not
answer; see its PROTOCOL.md). Both are scored with production retrieval (`hybrid.search`) on the golden
collection, and the TOP hit's score on each scale is compared with candidate thresholds.

With --reranker, the cross-encoder reranks the fused top 10 (as Open WebUI's reranker does behind the
patch) and two more scales are calibrated: raw logits (RAGFR_GATE_CE_EVIDENCE, `ragfr ask`) and their
sigmoid (Open WebUI's RAG_RELEVANCE_THRESHOLD). No cross-encoder weights exist offline on our build
machines, so that run happens where the model is (docs/runbooks/calibrate-relevance-threshold.md).

    python -m ragfr_tools.eval.gate_calibration --dsn "$DATABASE_URL" [--embedder SPEC] [--reranker MODEL] [--json]

The DSN's database receives the golden collection: use a scratch database, not production.

With --collection NAME, nothing is ingested: the questions are scored on that existing collection, e.g. an
Open WebUI knowledge base holding the golden documents uploaded as files named `<doc id>.txt` (a chunk's
document is its `doc_id` metadata, else the stem of its `name`). Golden questions with metadata filters are
left out there, because a chat cannot apply filters; --answerable-limit N keeps the first N answerable
questions (by id). tests/owui/test_chat_rates.py compares these rates with Open WebUI's chat on the same
collection.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ragfr.db.connect import connect
from ragfr.embed import load_embedder
from ragfr.errors import RagfrError
from ragfr.eval.beir import load_dataset
from ragfr.eval.corpus import chunk_documents, documents_ranking, ensure_ingested
from ragfr.filters.grammar import from_mapping
from ragfr.gate.rank import rrf_thresholds
from ragfr.ingest.chunking import ChunkConfig
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.hybrid import search
from ragfr.retrieval.rerank import Reranker, load_reranker
from ragfr_tools.repo import REPO


@dataclass
class Scored:
    id: str
    answerable: bool
    rrf: float
    cosine: float | None
    rerank: float | None = None  # the top hit's cross-encoder logit, when a reranker ran
    # what `ragfr ask` and the chat decide (ragfr.ask.gate_search: the fitted evidence gate of the embedding
    # model when the package ships one, else the rank rule) and which rule it was
    decision: str = ""
    rule: str = ""


@dataclass
class Operating:
    threshold: float
    answered: float  # share of answerable questions that pass
    refused: float  # share of unanswerable questions that are stopped

    @property
    def youden(self) -> float:
        return self.answered + self.refused - 1


def operating_point(scored: list[Scored], threshold: float, key: str) -> Operating:
    pos = [getattr(s, key) for s in scored if s.answerable and getattr(s, key) is not None]
    neg = [getattr(s, key) for s in scored if not s.answerable and getattr(s, key) is not None]
    return Operating(threshold, sum(v >= threshold for v in pos) / max(len(pos), 1),
                     sum(v < threshold for v in neg) / max(len(neg), 1))


def best_threshold(scored: list[Scored], key: str) -> Operating | None:
    candidates = sorted({getattr(s, key) for s in scored if getattr(s, key) is not None})
    points = [operating_point(scored, t, key) for t in candidates]
    return max(points, key=lambda p: (p.youden, p.refused)) if points else None


def score_all(
    dsn: str, embedder_spec: str, golden: Path, unanswerable: Path, reranker: Reranker | None = None,
    *, collection: str | None = None, answerable_limit: int | None = None,
) -> list[Scored]:
    """Ingest the golden corpus (or, with `collection`, use that existing collection) and score both sides."""
    dataset = load_dataset(golden)
    embedder = load_embedder(embedder_spec)
    with connect(dsn, autocommit=True) as conn:
        if collection is None:
            name, _ = ensure_ingested(conn, dataset, embedder, ChunkConfig(), progress=True)
            return score_collection(conn, name, chunk_documents(conn, name), dataset, unanswerable, embedder,
                                    reranker, with_filters=True, answerable_limit=answerable_limit)
        return score_collection(conn, collection, collection_documents(conn, collection), dataset, unanswerable,
                                embedder, reranker, with_filters=False, answerable_limit=answerable_limit)


def collection_documents(conn: Any, collection: str) -> dict[str, str]:
    """chunk id -> document id for any collection: the `doc_id` metadata (ragfr ingestion), else the stem
    of the file `name` (an Open WebUI upload of `<doc id>.txt`)."""
    rows = conn.execute(
        "SELECT id, coalesce(vmetadata->>'doc_id', vmetadata->>'name') FROM document_chunk WHERE collection_name = %s",
        (collection,),
    ).fetchall()
    return {str(chunk): Path(str(doc)).stem if "." in str(doc) else str(doc) for chunk, doc in rows if doc}


def unanswerable_questions(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def score_collection(
    conn: Any, collection: str, chunk_to_doc: dict[str, str], dataset: Any, unanswerable: Path, embedder: Any,
    reranker: Reranker | None = None, *, with_filters: bool = True, answerable_limit: int | None = None,
) -> list[Scored]:
    """Production retrieval on `collection`. Answerable side: golden questions whose relevant document is
    in the top 3 (at most `answerable_limit`, by id); without `with_filters`, questions with filters are
    left out. Unanswerable side: every question of `unanswerable`."""
    config = SearchConfig(rerank=reranker is not None)
    out: list[Scored] = []
    for q in sorted(dataset.queries.values(), key=lambda q: q.id):
        if answerable_limit is not None and len(out) >= answerable_limit:
            break
        if q.filters and not with_filters:
            continue
        result = search(conn, q.text, collections=[collection], conditions=from_mapping(dict(q.filters)),
                        embedder=embedder, config=config, reranker=reranker)
        top3 = documents_ranking([h.id for h in result.hits], chunk_to_doc)[:3]
        if not set(top3) & set(dataset.qrels.get(q.id, {})):
            continue
        out.append(_scored(q.id, True, result))
    for item in unanswerable_questions(unanswerable):
        result = search(conn, item["text"], collections=[collection], embedder=embedder, config=config,
                        reranker=reranker)
        out.append(_scored(item["_id"], False, result))
    return out


def _scored(qid: str, answerable: bool, result: Any) -> Scored:
    from ragfr.ask import gate_search
    from ragfr.retrieval.arms import SEMANTIC

    top = result.hits[0] if result.hits else None
    decision = gate_search(result)
    return Scored(qid, answerable, top.rrf_score if top else 0.0,
                  max((h.scores[SEMANTIC.name] for h in result.hits if SEMANTIC.name in h.scores), default=None),
                  top.rerank_score if top else None, decision.outcome.value, decision.rule)


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def report(scored: list[Scored]) -> dict[str, Any]:
    _, default_evidence = rrf_thresholds(60)
    n_pos, n_neg = sum(s.answerable for s in scored), sum(not s.answerable for s in scored)
    return {
        "answerable": sum(s.answerable for s in scored),
        "unanswerable": sum(not s.answerable for s in scored),
        "rrf": {
            "default": asdict(operating_point(scored, default_evidence, "rrf")),
            "best": _as_dict(best_threshold(scored, "rrf")),
        },
        "cosine_of_best_semantic_hit": {"best": _as_dict(best_threshold(scored, "cosine"))},
        # the product's own decision (answered = not refused: a caution calls the model too)
        "gate": {"answered": sum(s.decision != "refuse" for s in scored if s.answerable) / max(n_pos, 1),
                 "refused": sum(s.decision == "refuse" for s in scored if not s.answerable) / max(n_neg, 1),
                 "rules": sorted({s.rule for s in scored})},
        **_cross_encoder(scored),
        "scores": [asdict(s) for s in scored],
    }


def _cross_encoder(scored: list[Scored]) -> dict[str, Any]:
    """The logit threshold and, at the same operating point, its sigmoid: the value Open WebUI compares
    with RAG_RELEVANCE_THRESHOLD (it reranks with the sigmoid activation, a monotone map)."""
    best = best_threshold(scored, "rerank")
    if best is None:
        return {}
    as_sigmoid = Operating(sigmoid(best.threshold), best.answered, best.refused)
    return {
        "cross_encoder_logit": {"best": asdict(best)},
        "cross_encoder_sigmoid": {"best": asdict(as_sigmoid)},
        "settings": {"RAG_RELEVANCE_THRESHOLD": round(as_sigmoid.threshold, 6),
                     "RAGFR_GATE_CE_EVIDENCE": round(best.threshold, 6)},
    }


def _as_dict(point: Operating | None) -> dict[str, Any] | None:
    return asdict(point) if point else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.eval.gate_calibration", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True, help="a SCRATCH database migrated for the embedder's space "
                   "(the golden collection is ingested into it)")
    p.add_argument("--embedder", default="local:multilingual-e5-small",
                   help="embedder spec, e.g. ollama:bge-m3 in a cluster (default: %(default)s)")
    p.add_argument("--reranker", help="cross-encoder model id (from the Hugging Face cache) or local path; "
                   "calibrates RAG_RELEVANCE_THRESHOLD and RAGFR_GATE_CE_EVIDENCE")
    p.add_argument("--golden", type=Path, default=REPO / "eval" / "golden")
    p.add_argument("--unanswerable", type=Path, default=REPO / "eval" / "gate" / "unanswerable.jsonl")
    p.add_argument("--collection", help="score this existing collection instead of ingesting the golden corpus "
                   "(e.g. an Open WebUI knowledge base id holding the golden documents as <doc id>.txt files); "
                   "golden questions with filters are left out")
    p.add_argument("--answerable-limit", type=int, help="keep the first N answerable golden questions (by id)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        reranker = load_reranker(args.reranker) if args.reranker else None
        out = report(score_all(args.dsn, args.embedder, args.golden, args.unanswerable, reranker,
                               collection=args.collection, answerable_limit=args.answerable_limit))
    except RagfrError as exc:
        print(f"gate_calibration: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"answerable (retrieved in top 3): {out['answerable']}   unanswerable: {out['unanswerable']}")
    for scale in ("rrf", "cosine_of_best_semantic_hit", "cross_encoder_logit", "cross_encoder_sigmoid"):
        for name, point in out.get(scale, {}).items():
            if point is None:
                continue
            print(f"{scale:28s} {name:8s} threshold {point['threshold']:.5f}: answers {point['answered']:.1%} of "
                  f"answerable, refuses {point['refused']:.1%} of unanswerable")
    for key, value in out.get("settings", {}).items():
        print(f"{key}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
