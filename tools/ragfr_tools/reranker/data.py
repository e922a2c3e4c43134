"""PIAF split by article, and training pairs whose negatives are ragfr's own hybrid mistakes.

Split: an article (PIAF's unit of a title and its paragraphs) is in the TEST split when the sha256 of its
title, as an integer, is < `test_buckets` mod 10; otherwise TRAIN. It depends on the title alone (not on
the file order, a seed or the other articles), so it is the same on every machine and for every PIAF
subset, and no article, hence no paragraph, is in both.

Mining: the train articles' paragraphs are ingested (production ingestion, e5-small) into their own
collection; each sampled train question is searched with `ragfr.retrieval.hybrid.search` (production
settings, no reranker) and its negatives are the passages of the top `mining_depth` hits that do not
belong to its paragraph, hardest (highest ranked) first. Test paragraphs are never searched here, so
they can never be training negatives. The result is cached as JSONL: a rerun of training does not mine.

    python -m ragfr_tools.reranker.data --dsn DSN --piaf piaf-v1.1.json [--out mined.jsonl]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ragfr.eval.beir import Dataset, Document, Query
from ragfr.eval.piaf import load_piaf, piaf_to_beir
from ragfr_tools.reranker.hyper import HYPER, Hyper, mining_hash

EMBEDDER = "local:multilingual-e5-small"
# Every passing row is scored exactly (filter first, ragfr.retrieval.semantic): an exact top-k does not depend
# on the HNSW graph, whose node levels pgvector draws at random when it builds it, so a rerun against another
# database finds the same neighbours. The corpora here hold at most a few thousand chunks.
EXACT = 1_000_000


def is_test_article(title: str, test_buckets: int = HYPER.test_buckets) -> bool:
    return int(hashlib.sha256(title.encode("utf-8")).hexdigest(), 16) % 10 < test_buckets


def split_titles(titles: Iterable[str], test_buckets: int = HYPER.test_buckets) -> tuple[list[str], list[str]]:
    """(train, test) titles, sorted; duplicates collapse (a title is one article for the split)."""
    unique = sorted(set(titles))
    test = [t for t in unique if is_test_article(t, test_buckets)]
    train = [t for t in unique if not is_test_article(t, test_buckets)]
    return train, test


def subset(dataset: Dataset, titles: set[str], name: str) -> Dataset:
    """The documents whose article title is in `titles`, and only the questions about them."""
    corpus = {i: d for i, d in dataset.corpus.items() if d.title in titles}
    qrels = {q: rel for q, rel in dataset.qrels.items() if all(doc in corpus for doc in rel)}
    queries = {q: dataset.queries[q] for q in qrels}
    return Dataset(name, corpus, queries, qrels)


def split_dataset(data: dict[str, Any], h: Hyper = HYPER) -> tuple[Dataset, Dataset, Dataset]:
    """(full, train, test) BEIR datasets of PIAF. `full` is what `ragfr datasets piaf` writes."""
    full = piaf_to_beir(data)
    train_titles, test_titles = split_titles((d.title for d in full.corpus.values()), h.test_buckets)
    return full, subset(full, set(train_titles), "piaf-train"), subset(full, set(test_titles), "piaf-test")


def split_hash(train: Dataset, test: Dataset) -> str:
    """Identifies the split (which documents and questions are on which side) for the manifest."""
    digest = hashlib.sha256()
    for side in (train, test):
        digest.update(json.dumps([sorted(side.corpus), sorted(side.queries)]).encode())
    return digest.hexdigest()[:16]


def sample_queries(dataset: Dataset, n: int, seed: int) -> list[Query]:
    """A seeded sample of `n` questions in a stable order (all of them when n >= their number)."""
    ids = sorted(dataset.queries)
    if n < len(ids):
        ids = sorted(random.Random(seed).sample(ids, n))
    return [dataset.queries[i] for i in ids]


def passage(doc: Document) -> str:
    """The text as ingested (ragfr.eval.corpus.to_ingest_documents): the title heads the paragraph."""
    return f"{doc.title}\n\n{doc.text}" if doc.title else doc.text


def mine(dsn: str, data: dict[str, Any], out: Path, h: Hyper = HYPER, *, progress_every: int = 50) -> int:
    """Write one JSON line per sampled train question: query, positive, negatives (passage texts) and the
    hybrid top-k document ids. Returns the number of lines."""
    import psycopg

    from ragfr.embed import load_embedder
    from ragfr.eval.corpus import chunk_documents, documents_ranking, ensure_ingested
    from ragfr.ingest.chunking import ChunkConfig
    from ragfr.retrieval import hybrid
    from ragfr.retrieval.config import SearchConfig

    _, train, test = split_dataset(data, h)
    embedder = load_embedder(EMBEDDER)
    config = SearchConfig().with_(rerank=False, k=h.mining_depth, exact_threshold=EXACT)
    queries = sample_queries(train, h.train_questions, h.seed)
    started = time.monotonic()
    tmp = out.with_suffix(".partial")
    out.parent.mkdir(parents=True, exist_ok=True)
    with psycopg.connect(dsn) as conn:
        print(f"mine: ingesting the {len(train.corpus)} train paragraphs (cached embeddings are reused)", flush=True)
        collection, _ = ensure_ingested(conn, train, embedder, ChunkConfig(), progress=False)
        chunk_to_doc = chunk_documents(conn, collection)
        conn.commit()
        vectors = embedder.embed_queries([q.text for q in queries])
        with tmp.open("w", encoding="utf-8") as f:
            for n, (query, vector) in enumerate(zip(queries, vectors, strict=True), 1):
                positive = next(iter(train.qrels[query.id]))
                result = hybrid.search(conn, query.text, collections=[collection], query_vector=vector,
                                       embedder=embedder, config=config)
                ranked = documents_ranking([str(hit.id) for hit in result.hits], chunk_to_doc)
                negatives = [hit.text for hit in result.hits if chunk_to_doc.get(str(hit.id)) != positive]
                f.write(mined_line(query.id, query.text, positive, passage(train.corpus[positive]),
                                   negatives[: h.negatives_per_question], ranked))
                if n % progress_every == 0 or n == len(queries):
                    el = time.monotonic() - started
                    print(f"mine: {n}/{len(queries)} questions, {el:.0f} s elapsed, "
                          f"eta {el / n * (len(queries) - n):.0f} s", flush=True)
    assert not set(train.corpus) & set(test.corpus)
    meta = {"split_hash": split_hash(train, test), "train": {"paragraphs": len(train.corpus),
            "questions": len(train.queries)}, "test": {"paragraphs": len(test.corpus), "questions": len(test.queries)},
            "mined_questions": len(queries), "seconds": round(time.monotonic() - started, 1)}
    out.with_suffix(".meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    tmp.replace(out)
    return len(queries)


def mined_line(qid: str, query: str, positive_id: str, positive: str, negatives: list[str], top: list[str]) -> str:
    """One JSONL line of the mined pairs; lock.py rebuilds the file byte for byte with it."""
    return json.dumps({"qid": qid, "query": query, "positive_id": positive_id, "positive": positive,
                       "negatives": negatives, "hybrid_top": top}, ensure_ascii=False) + "\n"


def read_mined(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def default_mined_path(state: Path) -> Path:
    return state / f"mined-{mining_hash()}.jsonl"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--piaf", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=None, help="default: .state/reranker/mined-<mining hash>.jsonl")
    args = ap.parse_args(argv)
    out = args.out or default_mined_path(Path(".state/reranker"))
    if out.exists():
        print(f"mine: {out} exists (same hyper-parameters), not mined again")
        return 0
    started = time.monotonic()
    n = mine(args.dsn, load_piaf(args.piaf), out)
    print(f"mine: {n} questions -> {out} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
