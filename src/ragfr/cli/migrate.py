"""`ragfr migrate`: create or upgrade the ragdb schema."""

from __future__ import annotations

import argparse
import sys
import time

from ragfr.cli.common import add_dsn, require_dsn
from ragfr.errors import ConfigError, DatabaseError, EmbeddingSpaceError

EPILOG = """\
what it does:
  Applies the versioned SQL files of migrations/ in order, each in its own transaction, and records
  version + SHA-256 in ragfr_schema_migrations. Re-running applies nothing new; two runners at once
  serialize on an advisory lock; a recorded file that was edited afterwards is refused.
  --dims and --embedding-model are read only when the schema is first created (or must agree with it
  afterwards): changing the embedding model is `ragfr embeddings migrate`.
  --vector-index: halfvec indexes the vectors at half precision (a third of the index size at 1024 dims;
  scores stay float32, see docs/benchmarks.md), vector keeps the full-precision index. The column is
  vector(N) either way. Given, it is applied on every run: an index of the other precision is rebuilt
  concurrently (minutes per 100k chunks; searches and writes go on). Omitted: halfvec when migration 0011
  applies, afterwards the live index keeps its precision.
  --filter-index type=contrat: the searches filtered on type=contrat walk their own graph, a partial HNSW
  index over those chunks, built concurrently (`ragfr filter-index --help`). Every run also rebuilds the
  declared filters' indexes that do not have the live index's precision.

examples:
  ragfr migrate                                    # DATABASE_URL from the environment; bge-m3:567m, 1024 dims
  ragfr migrate --dims 384 --embedding-model local:multilingual-e5-small
  ragfr migrate --app-role ragfr_app
                       # then grant ragfr_app exactly what Open WebUI needs (DML on document_chunk, SELECT)
  ragfr migrate --wait --timeout 600 --embedding-model ollama:bge-m3:567m --dims 1024
                       # init container: block until migrated, refuse a pod configured for another space
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
        help="embedder spec of the space: ollama:bge-m3:567m (default, the chart's), local:multilingual-e5-small, ...",
    )
    p.add_argument("--vector-index", choices=["halfvec", "vector"], default=None,
                   help="precision of the HNSW index: halfvec or vector (full precision); rebuilt "
                   "concurrently when the live index differs. Default: halfvec when migration 0011 applies, "
                   "afterwards keep the live index's")
    p.add_argument("--filter-index", action="append", default=[], metavar="KEY=VALUE",
                   help="declare a frequent filter whose searches walk their own HNSW graph (a partial index), "
                   "then build it concurrently; repeatable; adds to the declarations, never removes one "
                   "(`ragfr filter-index drop` does). Chart: migrations.filterIndexes")
    p.add_argument("--lock-wait", type=float, default=600.0, metavar="SECONDS",
                   help="wait at most this long for another `ragfr migrate` on the same database (default 600)")
    p.add_argument("--lock-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="each migration waits at most this long for a table lock; past it, the migration is "
                   "rolled back and the sessions in the way are named (default 30)")
    p.add_argument("--app-role", metavar="ROLE",
                   help="after the migrations, grant this existing role exactly what Open WebUI needs: SELECT on "
                   "the schema's tables, DELETE on document_chunk and INSERT/UPDATE of its columns id, vector, "
                   "collection_name, text, vmetadata; no TEMP, nothing else (re-applied each run)")
    p.add_argument("--wait", action="store_true",
                   help="apply nothing; wait until every known migration is applied, then require the space given "
                   "by --dims/--embedding-model (if any) to be the database's")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds --wait waits before failing (default 600)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ragfr.vector_index.upgrade import migrate

    dsn = require_dsn(args)
    if args.wait:
        return _wait(dsn, args)
    for flag, value in (("--lock-wait", args.lock_wait), ("--lock-timeout", args.lock_timeout)):
        if not 0 < value <= 86400:
            raise ConfigError(f"{flag} must be between 0 and 86400 seconds, got {value:g}")
    report = migrate(dsn, args.dims, args.embedding_model, say=lambda m: print(m, file=sys.stderr),
                     lock_wait_s=args.lock_wait, lock_timeout_s=args.lock_timeout, app_role=args.app_role,
                     vector_index=args.vector_index, filter_index=args.filter_index)
    if report.applied:
        print(f"applied {len(report.applied)} migration(s); embedding space {report.model} ({report.dims} dims)")
    else:
        print(f"schema up to date ({report.already} migrations); embedding space {report.model} ({report.dims} dims)")
    if report.app_role:
        print(f"role {report.app_role}: SELECT on {report.app_role_tables} tables, INSERT/UPDATE/DELETE on "
              "document_chunk (INSERT/UPDATE of Open WebUI's columns only), no TEMP, nothing else")
    return 0


def _wait(dsn: str, args: argparse.Namespace) -> int:
    """Block until EVERY migration this ragfr knows is recorded (a missing one below the highest counts),
    then, when --dims/--embedding-model say what the caller is configured with, require that space."""
    import psycopg

    from ragfr.db.connect import connect
    from ragfr.db.migrate import applied_versions, discover
    from ragfr.embed.space import read_space

    known = {m.version for m in discover()}
    deadline = time.monotonic() + args.timeout
    while True:
        try:
            applied = applied_versions(dsn)
        except DatabaseError as err:
            applied, reason = None, str(err)
        except psycopg.errors.InsufficientPrivilege:
            # The application role waits here too: the migrations Job grants it after the last migration,
            # in one transaction, so reading the schema at all means every grant is in place.
            applied, reason = None, "this role may not read the ragfr schema yet (`ragfr migrate --app-role` grants it)"
        else:
            missing = sorted(known - (applied or set()))
            reason = "no ragfr schema yet" if applied is None else f"migration(s) {missing} not applied yet"
        if applied is not None and known <= applied:
            break
        if time.monotonic() > deadline:
            raise DatabaseError(f"gave up after {args.timeout:.0f}s: {reason}")
        print(f"waiting: {reason}", file=sys.stderr)
        time.sleep(2)
    with connect(dsn, autocommit=True) as conn:
        space = read_space(conn)
    wanted_model = args.embedding_model or space.model
    wanted_dims = args.dims or space.dims
    if (wanted_model, wanted_dims) != (space.model, space.dims):
        # Waiting cannot fix this: a pod on another space would write vectors the database refuses (0009)
        # and embed queries no stored vector answers.
        raise EmbeddingSpaceError(
            f"configured for {wanted_model} ({wanted_dims} dims) but the database's embedding space is "
            f"{space.model} ({space.dims} dims): set embedding.model/embedding.dims to match (helm upgrade), "
            "or finish or roll back the embedding migration (docs/runbooks/embedding-migration.md)"
        )
    print(f"schema complete ({len(known)} migrations); embedding space {space.model} ({space.dims} dims)")
    return 0
