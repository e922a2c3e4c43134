"""`ragfr filter-index`: declare the frequent filters that get their own HNSW graph (a partial index)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from ragfr.cli.common import add_dsn, require_dsn

if TYPE_CHECKING:
    from ragfr.vector_index.graphs import Declared

EPILOG = """\
why:
  pgvector filters after the graph walk: a filter passing 10 % of the chunks makes the walk visit ten times
  the candidates of an unfiltered one. A declared filter gets a partial HNSW index over its rows only;
  searches with that equality (ragfr search --filter, Open WebUI's filter) walk it instead, like an
  unfiltered graph: at 100k chunks the vector arm of a 10 % filter is about four times faster on its own
  graph (figures: docs/benchmarks.md#current-figures). Worth it for filters used often that pass a few
  thousand chunks or more, up to about 30 % of them; under ~1,000 chunks, scoring the passing rows exactly
  is already cheap. At 1M chunks with 2 GB of shared_buffers the extra graphs slow unfiltered searches
  (about a third with two declared, same page): declare what is used more often than unfiltered searches.
  Each index costs disk and memory (about the shared index's size times the filter's share), and every
  write of a chunk it holds updates it too. docs/runbooks/filter-indexes.md.

what each command does:
  add KEY=VALUE ...   declare, then build each index CONCURRENTLY (searches and writes go on; progress
                      every 15 s). Interrupted or failed, the declaration stays: `sync` finishes it.
  drop KEY=VALUE ...  forget, then DROP INDEX CONCURRENTLY.
  list                declarations with their index's state (ready, building, invalid, missing, stale:
                      another precision than idx_document_chunk_vector), rows and size.
  sync                give every collection of more than 10,000 chunks a graph of its own (listed as
                      "collection NAME"; a search of that knowledge base walks only its rows, so
                      another collection's upload never changes its answers) and forget those of
                      5,000 or fewer; then build what is declared and not ready, drop what is built
                      and not declared. `ragfr migrate` (the chart's migrations Job) runs it too.
  While an embedding migration is open, add/drop record the declaration only: the migration builds the
  new space's filter indexes itself; `sync` after it finishes builds the rest.

examples:
  ragfr filter-index add type=contrat type=reglement
  ragfr filter-index list --json
  ragfr filter-index drop type=reglement
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "filter-index",
        help="declare frequent filters that get their own HNSW graph (partial indexes): add, drop, list, sync",
        description="Declare the frequent metadata filters (key=value) whose searches walk their own HNSW "
        "graph, a partial index over the chunks that pass, instead of the shared one.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb, text in (("add", "declare filters and build their indexes"),
                       ("drop", "forget filters and drop their indexes")):
        v = verbs.add_parser(verb, help=text, description=text + ".")
        v.add_argument("filters", nargs="+", metavar="KEY=VALUE",
                       help="one equality each, written as for `ragfr search --filter` (quotes for | or =)")
        _common(v)
    v = verbs.add_parser("list", help="declarations and the state of their indexes",
                         description="Declarations and the state of their indexes.")
    v.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    add_dsn(v)
    v.set_defaults(func=run)
    v = verbs.add_parser("sync", help="build what is declared and not ready, drop what is no longer declared",
                         description="Build what is declared and not ready, drop what is no longer declared.")
    _common(v)


def _common(v: argparse.ArgumentParser) -> None:
    add_dsn(v)
    v.add_argument("--maintenance-work-mem", default="512MB", metavar="SIZE",
                   help="PostgreSQL memory for each build (default 512MB; HNSW builds are fastest when the "
                   "graph fits, about 2.6 kB per chunk at 1024 dims in halfvec)")
    v.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ragfr.db.connect import connect
    from ragfr.vector_index import graphs

    dsn = require_dsn(args)
    pairs = [graphs.parse_declaration(text) for text in getattr(args, "filters", [])]
    with connect(dsn, autocommit=True) as conn:
        graphs.require_registry(conn)
        if args.verb == "list":
            return _show(graphs.listing(conn), as_json=args.json)
        for key, value in pairs:
            if args.verb == "add":
                new = graphs.declare(conn, key, value)
                print(f"{key}={value}: {'declared' if new else 'already declared'}", file=sys.stderr)
            else:
                gone = graphs.forget(conn, key, value)
                print(f"{key}={value}: {'forgotten' if gone else 'was not declared'}", file=sys.stderr)
        report = graphs.sync(conn, dsn=dsn, maintenance_work_mem=args.maintenance_work_mem,
                                     say=lambda m: print(m, file=sys.stderr))
        if report.skipped:
            print(f"indexes unchanged: {report.skipped}")
            return 0
        print(f"filter indexes: {len(report.built)} built, {len(report.dropped)} dropped, "
              f"{len(report.kept)} already ready; collections' own graphs: "
              f"{len(report.collections_declared)} declared, {len(report.collections_forgotten)} forgotten")
    return 0


def _show(declared: list[Declared], *, as_json: bool) -> int:
    if as_json:
        print(json.dumps([d.__dict__ for d in declared], ensure_ascii=False, indent=2))
        return 0
    if not declared:
        print("no filter declared (ragfr filter-index add KEY=VALUE)")
        return 0
    print(f"{'filter':<40} {'state':<9} {'rows':>10} {'size':>10}  index")
    for d in declared:
        rows = "" if d.rows is None else str(d.rows)
        size = "" if d.bytes is None else f"{d.bytes / 2**20:.1f} MiB"
        print(f"{d.label:<40} {d.state:<9} {rows:>10} {size:>10}  {d.index_name}")
    return 0
