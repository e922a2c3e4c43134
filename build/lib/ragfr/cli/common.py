"""Arguments several commands share, defined once so their help reads the same everywhere."""

from __future__ import annotations

import argparse
import os


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
