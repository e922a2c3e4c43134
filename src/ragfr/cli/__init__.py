"""`ragfr` command line: one sub-command module per verb, each exposing `register(subparsers)`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

import psycopg

from ragfr import __version__
from ragfr.cli import ask, datasets, embeddings, filter_index, ingest, migrate, owui, pgpass, search, verify_index
from ragfr.cli import eval as eval_cmd
from ragfr.cli import gate as gate_cmd
from ragfr.errors import RagfrError

# One module per verb, each with `register(subparsers)`; imported statically so that a missing or renamed
# module is an import error at once, never a verb that silently disappears.
COMMANDS = (migrate, ingest, search, ask, gate_cmd, eval_cmd, datasets, embeddings, filter_index, verify_index, owui,
            pgpass)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragfr",
        description=(
            "French hybrid retrieval on PostgreSQL + pgvector: French BM25 and HNSW vector arms, "
            "Reciprocal Rank Fusion, cross-encoder rerank and an evidence gate. "
            "Run `ragfr COMMAND --help` for each command."
        ),
    )
    parser.add_argument("--version", action="version", version=f"ragfr {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (`ragfr ... | head`): what it wanted is printed; end quietly, as `cat` does.
        _silence_stdio()
        return 0


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # --help is printed here: a closed pipe can already break it
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        rc: int = args.func(args)
    except RagfrError as err:
        print(f"ragfr: {err.label}: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("ragfr: interrupted", file=sys.stderr)
        return 130
    except psycopg.OperationalError as err:
        # The server went away mid-command (restart, failover, a terminated backend). Every command commits
        # its work in steps, so what was committed stays and the same command resumes from there.
        reason = (str(err).strip().splitlines() or ["connection lost"])[0]
        print(f"ragfr: error: lost the database connection ({reason}); work committed so far is kept: "
              "re-run the same command to resume", file=sys.stderr)
        return 2
    sys.stdout.flush()  # inside the try: a pipe closed early breaks here, not in the interpreter's exit
    return rc


def _silence_stdio() -> None:
    """Point stdout and stderr at /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):
            pass


if __name__ == "__main__":
    sys.exit(main())
