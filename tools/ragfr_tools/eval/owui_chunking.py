"""`ragfr eval` with Open WebUI's chunking: what analysts get when they upload through Open WebUI.

`ragfr eval` chunks with ragfr's chunker; documents uploaded through Open WebUI are chunked by Open WebUI's
own splitter with the settings file's CHUNK_SIZE / CHUNK_OVERLAP (charts/ragfr/files/openwebui-env.yaml).
This runs the same evaluation (`ragfr.eval.runner.run_eval`, same configurations, metrics and report) on
a collection chunked by Open WebUI's splitter, run in .venv-owui (owui_split.py):

    python -m ragfr_tools.eval.owui_chunking --dataset eval/golden \\
        --embedder local:multilingual-e5-small [--config ragfr-hybrid] [--limit-queries N --seed S] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from ragfr.errors import ConfigError, RagfrError
from ragfr.ingest.chunking import Chunk, ChunkConfig
from ragfr_tools.eval.owui_native import owui_python
from ragfr_tools.repo import REPO

SETTINGS = REPO / "charts" / "ragfr" / "files" / "openwebui-env.yaml"
SPLIT = Path(__file__).with_name("owui_split.py")


def settings_chunking(path: Path = SETTINGS) -> ChunkConfig:
    values = yaml.safe_load(path.read_text(encoding="utf-8"))
    try:
        return ChunkConfig(size=int(values["CHUNK_SIZE"]), overlap=int(values["CHUNK_OVERLAP"]))
    except KeyError as exc:
        raise ConfigError(f"{path}: no {exc.args[0]} (the chart and `make up` chunk with it)") from None


def _offsets(text: str, pieces: list[str]) -> list[Chunk]:
    """ragfr Chunks of the stored texts. Offsets are where a piece occurs in the document, or 0 when Open
    WebUI's header splitter rewrote its line breaks (the stored text is the splitter's, as in Open WebUI)."""
    chunks, cursor = [], 0
    for i, piece in enumerate(pieces):
        start = text.find(piece, cursor)
        start = max(start, 0)
        chunks.append(Chunk(i, start, start + len(piece), piece))
        cursor = start + 1
    return chunks


class OpenWebUISplitter:
    name = "open-webui"

    def __init__(self, chunking: ChunkConfig) -> None:
        self.chunking = chunking

    def chunker(self, texts: list[str]) -> Callable[[str], list[Chunk]]:
        python = owui_python()
        if not python.exists():
            raise ConfigError(f"{python} is missing: `make owui-venv` builds Open WebUI's venv")
        job = {"texts": texts, "chunk_size": self.chunking.size, "chunk_overlap": self.chunking.overlap}
        done = subprocess.run([str(python), str(SPLIT)], input=json.dumps(job), capture_output=True, text=True,
                              timeout=1800, check=False)
        if done.returncode != 0:
            raise ConfigError(f"Open WebUI's splitter failed: {done.stderr.strip().splitlines()[-1:]}")
        split = {text: _offsets(text, pieces) for text, pieces in zip(texts, json.loads(done.stdout), strict=True)}
        return lambda text: split[text]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.eval.owui_chunking", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", default=os.environ.get("DATABASE_URL"),
                   help="PostgreSQL URL (default: $DATABASE_URL, which keeps a password out of `ps`)")
    p.add_argument("--dataset", required=True, type=Path)
    p.add_argument("--embedder", default="local:multilingual-e5-small")
    p.add_argument("--config", action="append", help="configuration(s) to run (default: all)")
    p.add_argument("--limit-queries", type=int)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if not args.dsn:
        p.error("no database: pass --dsn or set DATABASE_URL")
    from ragfr.db.connect import connect
    from ragfr.embed import load_embedder
    from ragfr.eval.beir import load_dataset
    from ragfr.eval.report import table, to_json
    from ragfr.eval.runner import run_eval

    try:
        chunking = settings_chunking()
        dataset = load_dataset(args.dataset)
        embedder = load_embedder(args.embedder)
        configs = [n.strip() for c in (args.config or []) for n in c.split(",") if n.strip()] or None
        with connect(args.dsn) as conn:
            result = run_eval(conn, args.dsn, dataset, embedder, configs=configs, chunking=chunking,
                              limit_queries=args.limit_queries, seed=args.seed, progress=not args.no_progress,
                              splitter=OpenWebUISplitter(chunking))
    except RagfrError as exc:
        print(f"owui_chunking: {exc}", file=sys.stderr)
        return exc.exit_code
    document = {**to_json(result), "chunker": "open-webui"}
    print(json.dumps(document, indent=2, ensure_ascii=False) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
