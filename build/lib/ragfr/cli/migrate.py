"""`ragfr migrate`: create or upgrade the ragdb schema."""

from __future__ import annotations

import argparse
import sys
import time

from ragfr.cli.common import add_dsn, require_dsn
from ragfr.errors import DatabaseError

EPILOG = """\
what it does:
  Applies the versioned SQL files of migrations/ in order, each in its own transaction, and records
  version + SHA-256 in ragfr_schema_migrations. Re-running applies nothing new; two runners at once
  serialize on an advisory lock; a recorded file that was edited afterwards is refused.
  --dims and --embedding-model are read only when the schema is first created (or must agree with it
  afterwards): changing the embedding model is `ragfr embeddings migrate`.

examples:
  ragfr migrate --dsn "$DATABASE_URL"                                  # bge-m3, 1024 dims
  ragfr migrate --dsn "$DATABASE_URL" --dims 384 --embedding-model local:multilingual-e5-small
  ragfr migrate --dsn "$DATABASE_URL" --wait --timeout 600             # init container: block until migrated
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "migrate",
        help="create or upgrade the database schema (versioned, checksummed, idempotent)",
        description="Create or upgrade the ragdb schema: document_chunk (Open WebUI compatible), the French "
        "full-text configuration, the HNSW index and the BM25 statistics.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_dsn(p)
    p.add_argument("--dims", type=int, help="vector dimension of the embedding space (default 1024 for bge-m3)")
    p.add_argument(
        "--embedding-model",
        metavar="SPEC",
        help="embedder spec of the space, e.g. ollama:bge-m3 (default), local:multilingual-e5-small",
    )
    p.add_argument("--wait", action="store_true", help="apply nothing; wait until every known migration is applied")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds --wait waits before failing (default 600)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ragfr.db.migrate import discover, migrate, schema_version

    dsn = require_dsn(args)
    if args.wait:
        target = discover()[-1].version
        deadline = time.monotonic() + args.timeout
        while True:
            try:
                current = schema_version(dsn)
            except DatabaseError as err:
                current, reason = None, str(err)
            else:
                reason = f"schema version {current}, waiting for {target}"
            if current is not None and current >= target:
                print(f"schema at version {current}")
                return 0
            if time.monotonic() > deadline:
                raise DatabaseError(f"gave up after {args.timeout:.0f}s: {reason}")
            print(f"waiting: {reason}", file=sys.stderr)
            time.sleep(2)
    report = migrate(dsn, args.dims, args.embedding_model, say=lambda m: print(m, file=sys.stderr))
    if report.applied:
        print(f"applied {len(report.applied)} migration(s); embedding space {report.model} ({report.dims} dims)")
    else:
        print(f"schema up to date ({report.already} migrations); embedding space {report.model} ({report.dims} dims)")
    return 0
