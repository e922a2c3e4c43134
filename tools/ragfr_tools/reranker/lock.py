"""The mined pairs, pinned: a committed lock of ids and hashes from which `make reranker` rebuilds the exact
mined JSONL the recorded model was trained on, on any machine, without mining.

Why: mining searches a freshly built HNSW graph, and pgvector draws every node's level at random when it
builds one, so two databases holding the same rows can give different approximate top-10s (measured: 1 of
1,000 questions' top 10 changed against a second database). Different negatives train a different model.
The lock takes the index (and the embeddings' floats) out of the rerun: it names each pair by PIAF ids and
chunk positions, never by text (PIAF's text is read from ../shared/datasets, never copied into the repo),
and carries the sha256 of the JSONL it rebuilds, which the rebuild must match byte for byte.

    tools/ragfr_tools/reranker/locks/mined-<mining hash>.json
      piaf_sha256, split_hash, chunking, mined_sha256 (of the JSONL it rebuilds), and one row per question:
      [qid, positive_id, [[doc_id, chunk_index], ...negatives], [hybrid top-k doc ids]]

    python -m ragfr_tools.reranker.lock --piaf piaf-v1.1.json --mined .state/reranker/mined-X.jsonl  # write
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from ragfr.eval.beir import Dataset
from ragfr.eval.piaf import load_piaf, sha256_file
from ragfr.ingest.chunking import ChunkConfig, chunk_text
from ragfr_tools.reranker.data import mined_line, passage, read_mined, split_dataset, split_hash
from ragfr_tools.reranker.hyper import HYPER, Hyper, mining_hash

LOCKS = Path(__file__).resolve().parent / "locks"


class LockError(Exception):
    """The lock does not rebuild what it promises (other PIAF file, split, chunking or texts)."""


def row_per_line(doc: dict[str, Any], key: str) -> str:
    """`doc` as JSON with each element of doc[key] on a line of its own, so a committed file diffs by row."""
    head = ",\n".join(f" {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(doc.items()) if k != key)
    body = ",\n".join("  " + json.dumps(r, ensure_ascii=False) for r in doc[key])
    return "{\n" + head + f',\n {json.dumps(key)}: [\n' + body + "\n ]\n}\n"


def lock_path(h: Hyper = HYPER) -> Path:
    return LOCKS / f"mined-{mining_hash(h)}.json"


def chunk_texts(train: Dataset) -> dict[str, list[str]]:
    """doc id -> its chunks' texts, as ingestion stores them (the ingested text is data.passage)."""
    return {i: [c.text for c in chunk_text(passage(d), ChunkConfig())] for i, d in train.corpus.items()}


def write(piaf: Path, mined: Path, out: Path, h: Hyper = HYPER) -> dict[str, Any]:
    """The lock of a mined JSONL; refuses a file whose texts are not the train split's chunks."""
    _, train, test = split_dataset(load_piaf(piaf), h)
    chunks = chunk_texts(train)
    where = {text: [doc, n] for doc, texts in sorted(chunks.items()) for n, text in enumerate(texts)}
    rows = []
    for r in read_mined(mined):
        missing = [t[:60] for t in r["negatives"] if t not in where]
        if missing or r["positive"] != passage(train.corpus[r["positive_id"]]):
            raise LockError(f"{mined}: question {r['qid']}: a text is not a chunk of the train split: {missing}")
        rows.append([r["qid"], r["positive_id"], [where[t] for t in r["negatives"]], r["hybrid_top"]])
    lock = {"mining_hash": mining_hash(h), "piaf_sha256": sha256_file(piaf), "split_hash": split_hash(train, test),
            "chunking": dataclasses.asdict(ChunkConfig()), "mined_sha256": sha256_file(mined), "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(row_per_line(lock, "rows"), encoding="utf-8")
    check = out.with_name(out.name + ".check.jsonl")
    rebuild(piaf, out, check, h)  # the lock is only written if it rebuilds the very file it came from
    check.unlink()
    return lock


def rebuild(piaf: Path, lock_file: Path, out: Path, h: Hyper = HYPER) -> None:
    """Writes the mined JSONL the lock names to `out` and checks it byte for byte; raises LockError otherwise."""
    lock = json.loads(lock_file.read_text(encoding="utf-8"))
    checks = {"mining_hash": mining_hash(h), "piaf_sha256": sha256_file(piaf),
              "chunking": dataclasses.asdict(ChunkConfig())}
    _, train, test = split_dataset(load_piaf(piaf), h)
    checks["split_hash"] = split_hash(train, test)
    wrong = {k: (lock.get(k), v) for k, v in checks.items() if lock.get(k) != v}
    if wrong:
        raise LockError(f"{lock_file} was written for other inputs: " + "; ".join(
            f"{k}: lock {a}, here {b}" for k, (a, b) in wrong.items()))
    chunks = chunk_texts(train)
    queries = {**train.queries}
    tmp = out.with_name(out.name + ".partial")
    with tmp.open("w", encoding="utf-8") as f:
        for qid, positive, negatives, top in lock["rows"]:
            f.write(mined_line(qid, queries[qid].text, positive, passage(train.corpus[positive]),
                               [chunks[doc][n] for doc, n in negatives], top))
    if sha256_file(tmp) != lock["mined_sha256"]:
        tmp.unlink()
        raise LockError(f"{lock_file}: the rebuilt pairs' sha256 is not {lock['mined_sha256']} (PIAF's text or "
                        f"the chunker changed)")
    tmp.replace(out)


def differences(locked: Path, fresh: Path) -> dict[str, Any]:
    """How a fresh mining differs from the locked pairs (both mined JSONL): questions whose top k or whose
    negatives are not the same."""
    a = {r["qid"]: r for r in read_mined(locked)}
    b = {r["qid"]: r for r in read_mined(fresh)}
    both = sorted(set(a) & set(b))
    return {"questions": len(a), "same_questions": sorted(a) == sorted(b),
            "top_k_differs": [q for q in both if a[q]["hybrid_top"] != b[q]["hybrid_top"]],
            "negatives_differ": [q for q in both if a[q]["negatives"] != b[q]["negatives"]]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--piaf", type=Path, required=True)
    ap.add_argument("--mined", type=Path, required=True, help="the mined JSONL to lock (data.py's output)")
    ap.add_argument("--out", type=Path, default=None, help="default: locks/mined-<mining hash>.json")
    args = ap.parse_args(argv)
    out = args.out or lock_path()
    try:
        lock = write(args.piaf, args.mined, out)
    except LockError as exc:
        print(f"lock: {exc}", file=sys.stderr)
        return 1
    print(f"lock: {out}: {len(lock['rows'])} questions, rebuilds {args.mined} (sha256 {lock['mined_sha256'][:12]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
