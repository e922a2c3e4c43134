"""Arguments several commands share, defined once so their help reads the same everywhere."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable


def add_dsn(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dsn",
        default=os.environ.get("DATABASE_URL"),
        help="PostgreSQL URL, e.g. postgresql://ragfr:PASSWORD@127.0.0.1:5432/ragfr "
        "(default: $DATABASE_URL; `make db` prints one)",
    )


def require_dsn(args: argparse.Namespace) -> str:
    from ragfr.errors import ConfigError

    if not args.dsn:
        raise ConfigError("no database: pass --dsn postgresql://... or set DATABASE_URL (`make db` prints one)")
    return str(args.dsn)


def bounded_number(unit: str, upper: float) -> Callable[[str], float]:
    """An argparse `type`: a number above 0 and at most `upper`, its errors naming the unit."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of {unit}: {text!r}") from None
        if not 0 < value <= upper:
            raise argparse.ArgumentTypeError(f"{text}: give a number of {unit} above 0 and at most {upper:g}")
        return value

    return parse


def ef_search_arg(text: str) -> int | None:
    """An argparse `type` for hnsw.ef_search: `auto` (None, the size rule) or 1-1000."""
    from ragfr.errors import ConfigError
    from ragfr.retrieval.config import parse_ef_search

    try:
        return parse_ef_search(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
