"""libpq password files (PGPASSFILE): how a process with two databases, each with its own password, connects
through password-less URLs.

Why not passwords in URLs: Kubernetes builds env values with $(VAR) expansion, which cannot percent-encode,
so a password holding `@ / ? # %` or a space breaks the URL it is pasted into. Why not PGPASSWORD alone:
Open WebUI talks to two databases (its own and ragfr's) as two roles with two passwords, and PGPASSWORD is
one value for every connection. libpq reads the password file whenever a connection names no password,
whatever the driver on top (psycopg2 under SQLAlchemy, psycopg 3, psql).

File format (libpq docs, "The Password File"): one `host:port:database:user:password` line per connection;
`\\` and `:` inside a field are escaped with a backslash; libpq ignores the file unless its mode is 0600 or
stricter. A line cannot carry a newline, so such a password is refused here.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ragfr.db.connect import normalize_dsn, redact
from ragfr.errors import ConfigError


def escape(field: str) -> str:
    return field.replace("\\", "\\\\").replace(":", "\\:")


def line(dsn: str, password: str) -> str:
    """The password file line matching the connections `dsn` makes (its host, port, database and user)."""
    if any(c in password for c in "\n\r\x00"):
        raise ConfigError(f"the password for {redact(dsn)} contains a line break or NUL: a libpq password file "
                          "cannot hold it; choose another password")
    try:
        params = conninfo_to_dict(normalize_dsn(dsn))
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"invalid DSN {redact(dsn)}: {str(exc).strip().splitlines()[0]}") from exc
    if params.get("password"):
        raise ConfigError(f"{redact(dsn)} carries a password itself: give the password file URLs without one")
    missing = [k for k in ("host", "dbname", "user") if not params.get(k)]
    if missing:
        raise ConfigError(f"{redact(dsn)} names no {', '.join(missing)}: a password file line needs each")
    fields = [str(params["host"]), str(params.get("port") or "5432"), str(params["dbname"]), str(params["user"])]
    return ":".join(escape(f) for f in [*fields, password])


def render(entries: Sequence[tuple[str, str]]) -> str:
    """The file's text for (dsn, password) pairs, one line each, in order (libpq uses the first match)."""
    return "".join(line(dsn, password) + "\n" for dsn, password in entries)


def from_environment(pairs: Sequence[str], env: Mapping[str, str]) -> list[tuple[str, str]]:
    """`URL_VAR=PASSWORD_VAR` pairs resolved against `env`: the values never travel through argv."""
    out = []
    for pair in pairs:
        url_var, sep, password_var = pair.partition("=")
        if not sep or not url_var or not password_var:
            raise ConfigError(f"--entry {pair!r}: give URL_VARIABLE=PASSWORD_VARIABLE (names, not values)")
        unset = [v for v in (url_var, password_var) if v not in env]
        if unset:
            raise ConfigError(f"--entry {pair}: environment variable {', '.join(unset)} is not set")
        out.append((env[url_var], env[password_var]))
    return out


def write(path: Path, text: str) -> None:
    """Write atomically with mode 0600 (libpq ignores a password file that group or others can read)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".pgpass-")  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
