"""The questions the evidence gate is fitted and measured on (issue 38 item 2), each asked of the collections
that make it answerable, near-domain or off-domain, with production search (no reranker): one row per
(question, collection) with the search's evidence features (ragfr.retrieval.evidence) and the rank-only
gate's decision (ragfr.retrieval.gate.assess on the RRF scale, what the chart ships today).

Splits, fixed by hashes (no seed, no file order):
  PIAF      by article: sha256(title) mod 10 < 2 is TEST (the reranker's split, ragfr_tools.reranker.data),
            2-3 DEV, 4-9 FIT; a seeded sample of each side's questions is asked.
  golden, eval/gate/unanswerable.jsonl   by question: sha256(id) mod 10, the same buckets.
Collections (production ingestion, e5-small): PIAF whole; PIAF's train articles (FIT + DEV: the near-domain
corpus of the TEST questions, as in ragfr_tools.reranker.gate_rates); PIAF's TEST articles (the near-domain
corpus of the FIT and DEV questions: a fifth of PIAF, so fitting saw sparser near-domain corpora than the test
side meets); golden.
Kinds:
  answerable   a question asked of the collection that holds its paragraph, which the fused top 3 (what the
               chat model receives) holds; `miss` when the top 3 does not hold it (kept, not fitted on)
  near         a PIAF question asked of PIAF without its article; an unanswerable.jsonl near-domain question
               asked of golden
  off          PIAF questions asked of golden, golden questions asked of PIAF, unanswerable.jsonl questions
               asked of PIAF (and its off-domain ones of golden)
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragfr.eval.beir import Dataset, Query, load_dataset
from ragfr.eval.piaf import load_piaf
from ragfr_tools.eval.gate_calibration import unanswerable_questions
from ragfr_tools.repo import REPO
from ragfr_tools.reranker.data import EMBEDDER, sample_queries, split_dataset, subset

SIDES = ("fit", "dev", "test")
UNANSWERABLE = REPO / "eval" / "gate" / "unanswerable.jsonl"
GOLDEN = REPO / "eval" / "golden"


def side_of(key: str) -> str:
    bucket = int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % 10
    return "test" if bucket < 2 else "dev" if bucket < 4 else "fit"


@dataclass(frozen=True)
class Ask:
    """One search to run: question, collection key, its label."""

    source: str  # piaf | golden | unanswerable
    side: str
    qid: str
    text: str
    target: str  # collection key: piaf | piaf-no-<side> | golden
    kind: str  # answerable (or miss, decided by the search) | near | off
    relevant: tuple[str, ...] = ()
    filters: tuple[tuple[str, Any], ...] = ()


def plan(piaf: Dataset, golden: Dataset, per_side: dict[str, int], seed: int) -> Iterator[Ask]:
    titles = {d: doc.title for d, doc in piaf.corpus.items()}
    for side in SIDES:
        ids = [q for q, rel in piaf.qrels.items() if side_of(titles[next(iter(rel))]) == side]
        side_ds = Dataset(f"piaf-{side}", piaf.corpus, {q: piaf.queries[q] for q in ids},
                          {q: piaf.qrels[q] for q in ids})
        for q in sample_queries(side_ds, per_side[side], seed):
            rel = tuple(d for d, g in piaf.qrels[q.id].items() if g > 0)
            yield Ask("piaf", side, q.id, q.text, "piaf", "answerable", rel)
            yield Ask("piaf", side, q.id, q.text, "piaf-train" if side == "test" else "piaf-test", "near")
            yield Ask("piaf", side, q.id, q.text, "golden", "off")
    for q in sorted(golden.queries.values(), key=lambda q: q.id):
        rel = tuple(d for d, g in golden.qrels.get(q.id, {}).items() if g > 0)
        if not rel:
            continue
        yield Ask("golden", side_of(q.id), q.id, q.text, "golden", "answerable", rel, tuple(q.filters.items()))
        yield Ask("golden", side_of(q.id), q.id, q.text, "piaf", "off")
    for item in unanswerable_questions(UNANSWERABLE):
        side = side_of(item["_id"])
        yield Ask("unanswerable", side, item["_id"], item["text"], "golden",
                  "near" if item.get("kind") == "near-domain" else "off")
        yield Ask("unanswerable", side, item["_id"], item["text"], "piaf", "off")


def collections(conn: Any, piaf: Dataset, golden: Dataset, embedder: Any) -> dict[str, tuple[str, dict[str, str]]]:
    """collection key -> (collection name, chunk id -> document id), ingested idempotently."""
    from ragfr.eval.corpus import chunk_documents, ensure_ingested
    from ragfr.ingest.chunking import ChunkConfig

    datasets = {"piaf": piaf, "golden": golden}
    titles = {doc.title for doc in piaf.corpus.values()}
    datasets["piaf-train"] = subset(piaf, {t for t in titles if side_of(t) != "test"}, "piaf-train")
    datasets["piaf-test"] = subset(piaf, {t for t in titles if side_of(t) == "test"}, "piaf-test")
    out = {}
    for key, ds in datasets.items():
        print(f"gate_collect: ingesting {key} ({len(ds.corpus)} documents; cached embeddings reused)", flush=True)
        name, _ = ensure_ingested(conn, ds, embedder, ChunkConfig(), progress=False)
        out[key] = (name, chunk_documents(conn, name))
        conn.commit()
    return out


def articles_in(dsn: str, piaf: Dataset, collection: str) -> Dataset:
    """PIAF restricted to the articles every paragraph of which `collection` holds (a partly ingested PIAF
    collection: a run bounded in time on a busy machine, where embedding all of PIAF takes most of an hour)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        held = {str(r[0]) for r in conn.execute(
            "SELECT DISTINCT vmetadata->>'doc_id' FROM document_chunk WHERE collection_name = %s", (collection,))}
    by_title: dict[str, list[str]] = {}
    for doc_id, doc in piaf.corpus.items():
        by_title.setdefault(doc.title, []).append(doc_id)
    titles = {t for t, ids in by_title.items() if all(i in held for i in ids)}
    return subset(piaf, titles, f"piaf-{len(titles)}-articles")


def collect(dsn: str, piaf_json: Path, out: Path, per_side: dict[str, int], seed: int = 38,
            articles_from: str | None = None) -> list[dict[str, Any]]:
    """Run every search of `plan`; write one JSON row per search to `out` and return them. `articles_from`:
    restrict PIAF to the articles that collection holds whole (`articles_in`)."""
    import psycopg

    from ragfr.embed import load_embedder
    from ragfr.eval.corpus import documents_ranking
    from ragfr.filters.grammar import from_mapping
    from ragfr.retrieval import hybrid
    from ragfr.retrieval.config import SearchConfig
    from ragfr.retrieval.gate import GateConfig, assess

    piaf, _, _ = split_dataset(load_piaf(piaf_json))
    if articles_from:
        piaf = articles_in(dsn, piaf, articles_from)
        print(f"gate_collect: PIAF restricted to {piaf.name} ({len(piaf.corpus)} paragraphs, "
              f"{len(piaf.queries)} questions)", flush=True)
    golden = load_dataset(GOLDEN)
    asks = list(plan(piaf, golden, per_side, seed))
    random.Random(seed).shuffle(asks)  # a run cut short still holds every side and kind in proportion
    embedder = load_embedder(EMBEDDER)
    texts = sorted({a.text for a in asks})
    vectors = dict(zip(texts, embedder.embed_queries(texts), strict=True))
    config, rank_gate = SearchConfig(rerank=False), GateConfig.for_scale("rrf")
    rows: list[dict[str, Any]] = []
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with psycopg.connect(dsn, autocommit=True) as conn, out.open("w", encoding="utf-8") as f:
        colls = collections(conn, piaf, golden, embedder)
        for n, a in enumerate(asks, 1):
            name, chunk_to_doc = colls[a.target]
            result = hybrid.search(conn, a.text, collections=[name], conditions=from_mapping(dict(a.filters)),
                                   query_vector=vectors[a.text], embedder=embedder, config=config)
            kind = a.kind
            if kind == "answerable":
                top3 = documents_ranking([h.id for h in result.hits], chunk_to_doc)[:3]
                kind = "answerable" if set(top3) & set(a.relevant) else "miss"
            rows.append({"source": a.source, "side": a.side, "qid": a.qid, "text": a.text, "target": a.target,
                         "kind": kind, "features": result.evidence,
                         "rank_gate": "answer" if assess(result.hits, rank_gate).grounded else "refuse",
                         "top": [h.text[:200] for h in result.hits[:1]]})
            f.write(json.dumps(rows[-1], ensure_ascii=False) + "\n")  # a cut run leaves what it searched
            f.flush()
            if n % 200 == 0 or n == len(asks):
                el = time.monotonic() - started
                print(f"gate_collect: {n}/{len(asks)} searches, {el:.0f} s, eta {el / n * (len(asks) - n):.0f} s",
                      flush=True)
    return rows


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


__all__ = ["Ask", "Query", "collect", "plan", "read_rows", "side_of"]
