"""`ragfr verify-index`: recount a collection's BM25 index from document_chunk, compare, repair."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from ragfr.cli.common import add_dsn, require_dsn

if TYPE_CHECKING:
    import psycopg

    from ragfr.lexical_index.verify import Check

EPILOG = """\
what it compares:
  The lexical arm ranks chunks with BM25 from numbers the triggers of document_chunk keep exact on every
  write: per collection its chunk count and total length (ragfr_collection_stats) and each lexeme's
  document frequency (ragfr_term_stats); per chunk a docno (ragfr_lex_docs) and, per lexeme, its postings
  in blocks of 128 (ragfr_lex_blocks, with per-block bounds). This command recounts all of it from the
  chunks (and re-analyses their text, since fts and fts_len must follow it) and counts every row that
  differs. Nothing but the triggers writes these tables, so a difference means damage: a hand-run
  statement, a restore of some tables only, a role that could write them (see migrations 0012 and 0015).
  A damaged index does not fail searches: it silently ranks them wrong, or loses chunks from the lexical arm.

what it costs:
  Reads every chunk of the compared collections in one snapshot, without locks (writes go on). Re-analysing
  the text is most of it: 10k chunks of 120 words (881k postings) took 43 s on 2 busy cores, 7-9 s with
  --no-text. --repair rebuilds each differing collection in one transaction holding the lock every text
  write takes (uploads of any collection wait for it, searches do not; 34-39 s for those 10k chunks), then
  compares again.

output and exit status:
  one line per collection: `clean`, or `DIFFERS` and the counts (`--json`: one document);
  0 when every compared collection is clean (after --repair: when the repair made it so), 1 when one
  differs, 2 on an error. Run it as the schema owner (the migrations' role): Open WebUI's role may read
  but not repair.

examples:
  ragfr verify-index --all
  ragfr verify-index kb-contrats
  ragfr verify-index kb-contrats --repair
  ragfr verify-index --all --no-text --json
  when to run it: docs/runbooks/chart-upgrade.md (after the upgrade to migration 0015)
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify-index",
        help="recount the BM25 index of collections from their chunks; report differences, --repair them",
        description="Recount a collection's BM25 statistics and postings from document_chunk, compare them with "
        "what is stored, report the differences (exit 1) and, with --repair, rebuild them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("collection", nargs="?", metavar="COLLECTION",
                       help="the collection to check (Open WebUI's knowledge base or file collection name)")
    which.add_argument("--all", action="store_true",
                       help="every collection the chunks or the index know, and docnos of chunks that are gone")
    p.add_argument("--repair", action="store_true",
                   help="rebuild each differing collection's index rows from its chunks, then compare again")
    p.add_argument("--no-text", action="store_true",
                   help="trust each chunk's fts and fts_len instead of re-analysing its text (much faster; a "
                   "forged fts is then not seen)")
    p.add_argument("--json", action="store_true", help="one JSON document instead of lines")
    add_dsn(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import psycopg

    from ragfr.db.connect import connect
    from ragfr.errors import ConfigError, DatabaseError
    from ragfr.lexical_index import verify as index_check

    dsn = require_dsn(args)
    with connect(dsn, autocommit=True) as conn:
        if conn.execute("SELECT to_regproc('ragfr_lex_int4s')").fetchone() == (None,):
            raise DatabaseError("this database lacks ragfr's packed postings (migration 0013): run `ragfr migrate`")
        names = index_check.collections(conn) if args.all else [args.collection]
        if not args.all and not index_check.known(conn, args.collection):
            raise ConfigError(f"unknown collection {args.collection!r}: no chunk and no index row name it "
                              "(`ragfr verify-index --all` checks every collection)")
        checks, orphans = _compare(conn, names, orphans=args.all, text=not args.no_text)
        repaired: list[str] = []
        if args.repair and (orphans or any(not c.clean for c in checks)):
            try:
                for check in checks:
                    if not check.clean:
                        index_check.repair(conn, check.collection)
                        repaired.append(check.collection)
                if orphans:
                    index_check.remove_orphan_docs(conn)
            except psycopg.errors.InsufficientPrivilege as exc:
                raise DatabaseError(f"cannot repair as {conn.info.user}: {str(exc).strip().splitlines()[0]}; "
                                    "run it as the schema owner (the migrations' role)") from exc
            before = {c.collection: c for c in checks}
            checks, orphans = _compare(conn, names, orphans=args.all, text=not args.no_text)
            _show(checks, orphans, repaired, before, as_json=args.json)
        else:
            _show(checks, orphans, repaired, {}, as_json=args.json)
    return 0 if not orphans and all(c.clean for c in checks) else 1


def _compare(conn: psycopg.Connection, names: list[str], *, orphans: bool, text: bool) -> tuple[list[Check], int]:
    from ragfr.lexical_index import verify as index_check

    with conn.transaction():
        index_check.snapshot(conn)
        checks = [index_check.verify(conn, name, text=text) for name in names]
        return checks, index_check.orphan_docs(conn) if orphans else 0


def _show(checks: list[Check], orphans: int, repaired: list[str], before: dict[str, Check], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps({
            "collections": [{"collection": c.collection, "chunks": c.chunks, "clean": c.clean,
                             "differences": c.differences, "repaired": c.collection in repaired,
                             **({"before": before[c.collection].differences} if c.collection in before else {})}
                            for c in checks],
            "orphan_docs": orphans,
            "clean": not orphans and all(c.clean for c in checks),
        }, ensure_ascii=False, indent=2))
        return
    if not checks:
        print("no collection: document_chunk and the index are empty")
    for c in checks:
        was = before.get(c.collection)
        fixed = f" (repaired; was: {_counts(was)})" if c.collection in repaired and was is not None else ""
        state = "clean" if c.clean else f"DIFFERS: {_counts(c)}"
        print(f"{c.collection}: {c.chunks} chunks, {state}{fixed}")
    if orphans:
        print(f"ragfr_lex_docs: {orphans} docnos of chunks that no longer exist", file=sys.stdout)


def _counts(check: Check) -> str:
    return ", ".join(f"{name} {n}" for name, n in check.differences.items())
