"""`ragfr pgpass`: write a libpq password file from environment variables (an init container's job)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

EPILOG = """\
what it does:
  For each --entry URL_VAR=PASSWORD_VAR, reads the password-less connection URL in $URL_VAR and the password
  in $PASSWORD_VAR and writes the libpq password file line for that host, port, database and user (`:` and
  `\\` escaped). The file is written atomically with mode 0600. Point PGPASSFILE at it: every libpq client
  (psycopg, psycopg2 under SQLAlchemy, psql) then takes the password from it, so no password is ever pasted
  into a URL (where `@ / ? # %` or a space would break it) nor passed on a command line.

example (the chart's Open WebUI init container db-passfile):
  ragfr pgpass --out /run/ragfr-db/pgpass \\
      --entry PGVECTOR_DB_URL=RAGFR_DB_PASSWORD --entry DATABASE_URL=OPENWEBUI_DB_PASSWORD
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "pgpass",
        help="write a libpq password file (PGPASSFILE) from URL and password environment variables",
        description="Write a libpq password file for password-less connection URLs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", required=True, type=Path, help="file to write (mode 0600)")
    p.add_argument("--entry", action="append", required=True, metavar="URL_VAR=PASSWORD_VAR",
                   help="names of the environment variables holding a URL and its password (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ragfr.db import passfile

    entries = passfile.from_environment(args.entry, os.environ)
    passfile.write(args.out, passfile.render(entries))
    print(f"pgpass: wrote {len(entries)} line(s) to {args.out}")
    return 0
