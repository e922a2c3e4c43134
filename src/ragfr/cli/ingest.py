"""`ragfr ingest`: load files, chunk them the French-aware way, embed and store them for Open WebUI."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragfr.cli.common import add_dsn, bounded_number, require_dsn
from ragfr.errors import ConfigError
from ragfr.filters.grammar import check_key
from ragfr.ingest.chunking import (
    CHARS_PER_TOKEN,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    UNKNOWN_WINDOW_MAX_CHARS,
    max_chunk_size,
)
from ragfr.ingest.writer import IngestReport

# A 100 MB text file is about 100,000 chunks: hours of embedding on a laptop CPU, and a few hundred MB of
# memory while it is chunked. Larger files are almost always a mistake (a database dump, a log).
DEFAULT_MAX_FILE_MB = 100

DESCRIPTION = """\
Load .txt, .md, .pdf and .jsonl files (directories are walked for those), cut them into chunks at
paragraph, sentence and word boundaries (never inside a word; headings such as "Article 12" stay with
their text), embed the chunks and store them in document_chunk, where Open WebUI and `ragfr search`
read them.

Re-running is safe: chunk ids derive from collection + file + chunk text, so content already stored is
neither embedded nor written again, and a file that changed has its old chunks replaced (in the same
transaction as the new ones). Embeddings are cached on disk ($RAGFR_CACHE_DIR, default ~/.cache/ragfr).
"""

EPILOG = f"""\
file formats:
  .txt .md   UTF-8 text, one document per file
  .pdf       text layer of each page (scanned PDFs need OCR first); page number in the metadata
  .jsonl     one JSON object per line: {{"id": "a1", "text": "...", "metadata": {{"key": "value"}}}}
             (id: string or integer, unique in the file; metadata optional)

chunk sizes are in characters (default {DEFAULT_CHUNK_SIZE}, overlap {DEFAULT_CHUNK_OVERLAP});
about {CHARS_PER_TOKEN} French characters per token for e5, so 1000 characters stay well inside
its 512-token window. --chunk-size is bounded by the embedder's input window: at most
{max_chunk_size(512)} characters for local:multilingual-e5-small (512 tokens x {CHARS_PER_TOKEN}),
{UNKNOWN_WINDOW_MAX_CHARS} for models whose window ragfr does not know (Ollama, USE). Beyond its
window a model truncates or averages, so part of each chunk would not be searchable as written.

what it says: one summary line; "nothing changed" when every chunk was already stored; a warning per
empty document (no chunk: its old chunks, if any, are removed); the number of chunks another ingest of
the same source changed meanwhile (two ingests of one source serialize on a per-source lock: the one that
commits last is what stays stored). FIFOs, sockets and devices are refused by name.

metadata stored in vmetadata of every chunk: source (absolute file path), name (file name), hash (SHA-256
of the document text), chunk_index, start_index (character offset), doc_id (.jsonl id / PDF page),
embedding_config, plus each --meta. Filters of `ragfr search --filter` apply to these keys.

examples:
  ragfr ingest --collection contrats docs/contrats/
  ragfr ingest --collection faq --meta lang=fr --meta year:=2024 faq.jsonl
  ragfr ingest --collection cg --embedder local:multilingual-e5-small --chunk-size 600 --chunk-overlap 80 cg.pdf
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ingest",
        help="chunk, embed and store .txt/.md/.pdf/.jsonl files (idempotent)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_dsn(p)
    p.add_argument("--collection", required=True, metavar="NAME", help="collection the chunks belong to")
    p.add_argument(
        "--embedder",
        metavar="SPEC",
        help="ollama:MODEL, local:multilingual-e5-small or local:use-multilingual (default: the model of the "
        "database's embedding space; any other model is refused)",
    )
    p.add_argument(
        "--meta",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="metadata added to every chunk; repeatable. KEY=VALUE stores a string, KEY:=JSON a typed value "
        "(number, boolean, date string...) so that range filters compare numbers, not text",
    )
    p.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE, metavar="CHARS",
                   help=f"maximum characters per chunk (default {DEFAULT_CHUNK_SIZE})")
    p.add_argument("--chunk-overlap", type=int, default=DEFAULT_CHUNK_OVERLAP, metavar="CHARS",
                   help=f"characters repeated from the previous chunk, whole sentences or words "
                   f"(default {DEFAULT_CHUNK_OVERLAP})")
    p.add_argument("--batch-size", type=int, metavar="N", help="texts per embedding call (default: per backend)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the on-disk embedding cache")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--max-file-size", type=bounded_number("megabytes", 1_000_000), default=DEFAULT_MAX_FILE_MB,
                   metavar="MB",
                   help=f"refuse files larger than this, before anything is written (default {DEFAULT_MAX_FILE_MB} MB; "
                   "files are read and stored one at a time, so memory follows the largest file, not the total)")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or directories to ingest")
    p.set_defaults(func=run)


def _check_sizes(files: list[Path], max_mb: float) -> None:
    """All sizes are checked before the first file is read, so a refusal writes nothing."""
    for path in files:
        size = path.stat().st_size
        if size > max_mb * 1_000_000:
            raise ConfigError(
                f"{path}: {size / 1_000_000:.1f} MB is over --max-file-size {max_mb:g} MB; nothing was ingested "
                "(split the file, or raise --max-file-size if this machine has the memory)"
            )


def parse_meta(items: list[str]) -> dict[str, Any]:
    """`key=value` -> string; `key:=json` -> typed JSON value (scalars only, as Open WebUI stores)."""
    meta: dict[str, Any] = {}
    for item in items:
        if ":=" in item and ("=" not in item or item.index(":=") < item.index("=")):
            key, raw = item.split(":=", 1)
            try:
                value: Any = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"--meta {item!r}: the value after := must be JSON ({exc.msg})") from exc
            if isinstance(value, dict | list):
                raise ConfigError(f"--meta {item!r}: only scalar values (string, number, boolean) are allowed")
        elif "=" in item:
            key, value = item.split("=", 1)
        else:
            raise ConfigError(f"--meta {item!r}: expected KEY=VALUE or KEY:=JSON")
        key = key.strip()
        if not key or "\0" in key or (isinstance(value, str) and "\0" in value):
            raise ConfigError(f"--meta {item!r}: empty key or NUL byte")
        check_key(key, "--meta")  # a key `ragfr search --filter` could not name is refused here
        if key in meta:
            raise ConfigError(f"--meta {key} given twice")
        meta[key] = value
    return meta


def run(args: argparse.Namespace) -> int:
    from ragfr.db.connect import connect
    from ragfr.embed import load_embedder, parse_spec, read_space
    from ragfr.ingest import ChunkConfig, ingest_documents, iter_files, load_file

    meta = parse_meta(args.meta)
    if args.embedder is not None:
        parse_spec(args.embedder)  # "" is refused, never read as "the default"
    config = ChunkConfig(size=args.chunk_size, overlap=args.chunk_overlap)
    files = list(iter_files(args.paths))
    if not files:
        raise ConfigError("no .txt, .md, .pdf or .jsonl file found under the given paths")
    _check_sizes(files, args.max_file_size)
    report = IngestReport()
    with connect(require_dsn(args)) as conn:
        spec = args.embedder if args.embedder is not None else read_space(conn).model
        embedder = load_embedder(spec, batch_size=args.batch_size, cache=not args.no_cache)
        # One file at a time: read, chunk, embed, commit, then the next. Memory follows the largest file;
        # an error in file N leaves files 1..N-1 stored (a re-run skips them) and nothing of file N.
        for path in files:
            report.add(ingest_documents(
                conn, args.collection, load_file(path), embedder, config, progress=not args.no_progress,
                metadata=meta,
            ))
    for empty in report.empty:
        print(f"ragfr: warning: {empty}: empty (no text), no chunk stored", file=sys.stderr)
    print(
        f"{args.collection}: {len(files)} file(s), {report.documents} document(s), {report.chunks} chunk(s): "
        f"{report.inserted} added, {report.unchanged} already present ({report.updated} with new metadata), "
        f"{report.deleted} stale removed "
        f"({embedder.model_id})"
    )
    if report.concurrent:
        print(f"{report.concurrent} chunk(s) had been added or removed by another ingest of the same source(s) "
              "while this one ran; what is stored now is this run's version")
    if not (report.inserted or report.updated or report.deleted):
        print("nothing changed: " + (f"all {report.chunks} chunk(s) were already stored" if report.chunks
                                     else "the files hold no text"))
    return 0
