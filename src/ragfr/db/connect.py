"""Opening PostgreSQL connections with errors a person can act on."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import TupleRow

from ragfr.errors import ConfigError, DatabaseError, first_line

# SQLAlchemy-style URLs (as Open WebUI's PGVECTOR_DB_URL) name a driver after '+'; libpq does not.
_DRIVER_SUFFIX = re.compile(r"^(postgres(?:ql)?)\+[a-z0-9_]+://", re.IGNORECASE)
# scheme://user: then (greedy) everything up to the last '@' of the string.
_UNESCAPED_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://[^:/?#@]*:).*@", re.IGNORECASE | re.DOTALL)
# A URL DSN starts with its scheme (libpq: postgresql:// or postgres://); anything else is keyword/value, even
# when a quoted value (a password) holds "://".
_URL_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
# A password in a URL's query: `?password=` or `&password=`.
_QUERY_PASSWORD = re.compile(r"[?&]password=", re.IGNORECASE)


def normalize_dsn(dsn: str) -> str:
    """Accept libpq DSNs and SQLAlchemy URLs (`postgresql+psycopg2://...`) alike."""
    if not dsn or not dsn.strip():
        raise ConfigError("empty DSN: pass --dsn postgresql://USER:PASSWORD@HOST:PORT/DATABASE (or set DATABASE_URL)")
    if "\x00" in dsn:
        raise ConfigError("the DSN contains a NUL byte")
    return _DRIVER_SUFFIX.sub(r"\1://", dsn.strip())


def redact(dsn: str) -> str:
    """The DSN with its password replaced, for messages and logs: URL userinfo, a URL's `password=`
    parameter and keyword/value DSNs (`host=... password=...`) alike."""
    if not _URL_SCHEME.match(dsn):
        try:
            params = conninfo_to_dict(dsn)
        except psycopg.ProgrammingError:
            return "<unparseable DSN>"
        if "password" not in params:
            return dsn
        return make_conninfo("", **{**params, "password": "***"})
    unescaped = _UNESCAPED_USERINFO.match(dsn)
    if unescaped:
        # user:password@ — masked by hand, never by the URL parser: a password pasted without percent-encoding
        # is cut by it at its own '/', '?', '#' or '@' (postgresql://u:p#ss@h/db has no password for urlsplit,
        # which would show it whole). Mask up to the LAST '@' (at worst the host is masked too, never a secret
        # shown).
        dsn = f"{unescaped.group(1)}***@{dsn[unescaped.end():]}"
    in_query = _QUERY_PASSWORD.search(dsn)
    if in_query:
        # A raw '&' or '#' in the value cannot be told from a separator: nothing after `password=` is shown.
        dsn = dsn[:in_query.end()] + "***"
    try:
        parts = urlsplit(dsn)
        password = parts.password
    except ValueError:
        return "<unparseable DSN>"
    if password is not None and password != "***":
        parts = parts._replace(netloc=parts.netloc.replace(f":{password}@", ":***@", 1))
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(k == "password" for k, _ in query):
        parts = parts._replace(query=urlencode([(k, "***" if k == "password" else v) for k, v in query], safe="*"))
    return urlunsplit(parts)


def with_database(dsn: str, name: str) -> str:
    """The same server and credentials, another database (URL-style DSNs)."""
    return urlunsplit(urlsplit(dsn)._replace(path=f"/{name}"))


def connect(dsn: str, *, autocommit: bool = False, timeout: int = 10) -> psycopg.Connection[TupleRow]:
    """Connect, or raise DatabaseError naming the server (password redacted) and libpq's reason."""
    dsn = normalize_dsn(dsn)
    try:
        return psycopg.connect(dsn, autocommit=autocommit, connect_timeout=timeout, application_name="ragfr")
    except psycopg.ProgrammingError as exc:  # malformed DSN
        raise ConfigError(f"invalid DSN {redact(dsn)}: {first_line(exc)}") from exc
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to {redact(dsn)}: {first_line(exc)}") from exc

