"""The trained cross-encoder laid out as a Hugging Face cache: what the ragfr/reranker image holds.

The chart's `openwebui.reranker.source: image` copies the image's cache into the pod's model directory, and
Open WebUI 0.12.4 resolves RAG_RERANKING_MODEL in it offline (`snapshot_download(local_files_only=True)`:
the repository's refs/main names a snapshot directory). So the model is published under one repository id,
REPO, at one "commit": the first 40 hex of the manifest's `files_sha256` (the sha256 over every file of the
trained model), so the same weights always get the same commit and other weights another.

    python -m ragfr_tools.reranker.package [--model .state/reranker/model-<hash>] --out DIR
    -> DIR/models--ragfr--reranker-fr/refs/main, DIR/models--ragfr--reranker-fr/snapshots/<commit>/...
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from ragfr_tools.reranker.hyper import hyper_hash

REPO = "ragfr/reranker-fr"


def default_model(state: Path = Path(".state/reranker")) -> Path:
    """Where `make reranker` leaves the default preset's model."""
    return state / f"model-{hyper_hash()}"


def commit_of(model: Path) -> str:
    manifest = model / "manifest.json"
    if not manifest.is_file():
        raise SystemExit(f"reranker package: {manifest} not found: {model} is not a model `make reranker` trained")
    files_sha256 = json.loads(manifest.read_text(encoding="utf-8")).get("files_sha256", "")
    if len(files_sha256) != 64:
        raise SystemExit(f"reranker package: {manifest} has no files_sha256")
    return str(files_sha256[:40])


def package(model: Path, out: Path) -> str:
    """Writes the cache under out (replacing REPO's entry) and returns the commit."""
    commit = commit_of(model)
    root = out / f"models--{REPO.replace('/', '--')}"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(model, root / "snapshots" / commit)
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text(commit)
    return commit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=None, help="trained model folder (default: the default preset's)")
    ap.add_argument("--out", type=Path, required=True, help="the Hugging Face cache folder to write")
    args = ap.parse_args(argv)
    model = args.model or default_model()
    commit = package(model, args.out)
    print(f"reranker package: {REPO} at {commit} from {model} in {args.out}", file=sys.stderr)
    print(commit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
