"""The questions the evidence gate is fitted and measured on (issue 38 item 2), each asked of the collections
that make it answerable, near-domain or off-domain, with production search (no reranker): one row per
(question, collection) with the search's evidence features (ragfr.gate.features) and the rank-only
gate's decision (ragfr.gate.rank.assess on the RRF scale, what the chart ships today).

Splits, fixed by hashes (no seed, no file order):
  PIAF      by article: sha256(title) mod 10 < 2 is TEST (the reranker's split, ragfr_tools.reranker.data),
            2-3 DEV, 4-9 FIT; a seeded sample of each side's questions is asked.
  golden, eval/gate/unanswerable.jsonl   by question: sha256(id) mod 10, the same buckets.
Collections (production ingestion, e5-small): PIAF whole; for each side, PIAF without that side's articles
(`piaf-no-<side>`: the near-domain corpus of its questions; TEST's is FIT + DEV, as in
ragfr_tools.reranker.gate_rates, 80 % of PIAF; DEV's FIT + TEST, 80 % too, so the thresholds are chosen on
near-domain corpora as dense as the test side meets; FIT's DEV + TEST, 40 %); golden. (Until 2026-12-06 FIT
and DEV questions were asked of the TEST articles alone, a fifth of PIAF: the DEV side then answered 9 % of
its near-domain questions without caution and the TEST side 25 %.)
Kinds:
  answerable   a question asked of the collection that holds its paragraph, which the fused top 3 (what the
               chat model receives) holds; `miss` when the top 3 does not hold it (kept, not fitted on)
  near         a PIAF question asked of PIAF without its article; an unanswerable.jsonl near-domain question
               asked of golden
  off          PIAF questions asked of golden, golden questions asked of PIAF, unanswerable.jsonl questions
               asked of PIAF (and its off-domain ones of golden)
A PIAF question's row also says whether one of its annotated answers is written in the fused top 3
(`answer_in_top3`, case and spacing ignored): a near-domain question whose answer another article states
is answerable after all, which the labels, one paragraph per question, do not know.
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
    answers: tuple[str, ...] = ()  # PIAF's annotated answer spans


def plan(piaf: Dataset, golden: Dataset, per_side: dict[str, int], seed: int,
         answers: dict[str, tuple[str, ...]] | None = None) -> Iterator[Ask]:
    titles = {d: doc.title for d, doc in piaf.corpus.items()}
    spans = answers or {}
    for side in SIDES:
        ids = [q for q, rel in piaf.qrels.items() if side_of(titles[next(iter(rel))]) == side]
        side_ds = Dataset(f"piaf-{side}", piaf.corpus, {q: piaf.queries[q] for q in ids},
                          {q: piaf.qrels[q] for q in ids})
        for q in sample_queries(side_ds, per_side[side], seed):
            rel = tuple(d for d, g in piaf.qrels[q.id].items() if g > 0)
            a = spans.get(q.id, ())
            yield Ask("piaf", side, q.id, q.text, "piaf", "answerable", rel, answers=a)
            yield Ask("piaf", side, q.id, q.text, f"piaf-no-{side}", "near", answers=a)
            yield Ask("piaf", side, q.id, q.text, "golden", "off", answers=a)
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


def answer_spans(piaf_json: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """PIAF question id -> its annotated answers."""
    return {str(qa["id"]): tuple(str(a["text"]) for a in qa.get("answers", []) if str(a["text"]).strip())
            for article in piaf_json["data"] for p in article["paragraphs"] for qa in p["qas"]}


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def answer_in(answers: tuple[str, ...], passages: list[str]) -> bool | None:
    """Whether one of `answers` is written in one of `passages` (None: no annotated answer)."""
    if not answers:
        return None
    held = [_norm(t) for t in passages]
    return any(_norm(a) in t for a in answers for t in held)


def collections(conn: Any, piaf: Dataset, golden: Dataset, embedder: Any) -> dict[str, tuple[str, dict[str, str]]]:
    """collection key -> (collection name, chunk id -> document id), ingested idempotently."""
    from ragfr.eval.corpus import chunk_documents, ensure_ingested
    from ragfr.ingest.chunking import ChunkConfig

    datasets = {"piaf": piaf, "golden": golden}
    titles = {doc.title for doc in piaf.corpus.values()}
    for side in SIDES:
        datasets[f"piaf-no-{side}"] = subset(piaf, {t for t in titles if side_of(t) != side}, f"piaf-no-{side}")
    out = {}
    for key, ds in datasets.items():
        print(f"gate_collect: ingesting {key} ({len(ds.corpus)} documents; cached embeddings reused)", flush=True)
        name, _ = ensure_ingested(conn, ds, embedder, ChunkConfig(), progress=False)
        out[key] = (name, chunk_documents(conn, name))
        conn.commit()
    return out


def articles_in(dsn: str, piaf: Dataset, collection: str) -> Dataset:
    """PIAF restricted to the articles every paragraph of which `collection` holds (a partly ingested PIAF
    collection: a run bounded in time on a busy machine; embedding all of PIAF took 366 s on a quiet one)."""
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
    from ragfr.gate.rank import GateConfig, assess
    from ragfr.retrieval import hybrid
    from ragfr.retrieval.config import SearchConfig

    raw = load_piaf(piaf_json)
    piaf, _, _ = split_dataset(raw)
    if articles_from:
        piaf = articles_in(dsn, piaf, articles_from)
        print(f"gate_collect: PIAF restricted to {piaf.name} ({len(piaf.corpus)} paragraphs, "
              f"{len(piaf.queries)} questions)", flush=True)
    golden = load_dataset(GOLDEN)
    asks = list(plan(piaf, golden, per_side, seed, answer_spans(raw)))
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
            kind, relevant = a.kind, None
            if kind == "answerable":
                top3 = documents_ranking([h.id for h in result.hits], chunk_to_doc)[:3]
                kind = "answerable" if set(top3) & set(a.relevant) else "miss"
                # the first of the top 3 passages that belongs to the question's paragraph
                relevant = next((i for i, h in enumerate(result.hits[:3]) if chunk_to_doc.get(h.id) in a.relevant),
                                None)
            rows.append({"source": a.source, "side": a.side, "qid": a.qid, "text": a.text, "target": a.target,
                         "kind": kind, "features": result.evidence,
                         "answer_in_top3": answer_in(a.answers, [h.text or "" for h in result.hits[:3]]),
                         "rank_gate": "answer" if assess(result.hits, rank_gate).grounded else "refuse",
                         "top": [h.text[:200] for h in result.hits[:1]],
                         # what the chat model reads (ragfr_tools.eval.answerability reads them again by id)
                         "top3_ids": [h.id for h in result.hits[:3]], "relevant_rank": relevant})
            f.write(json.dumps(rows[-1], ensure_ascii=False) + "\n")  # a cut run leaves what it searched
            f.flush()
            if n % 200 == 0 or n == len(asks):
                el = time.monotonic() - started
                print(f"gate_collect: {n}/{len(asks)} searches, {el:.0f} s, eta {el / n * (len(asks) - n):.0f} s",
                      flush=True)
    return rows


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


__all__ = ["Ask", "Query", "answer_in", "answer_spans", "collect", "plan", "read_rows", "side_of"]
