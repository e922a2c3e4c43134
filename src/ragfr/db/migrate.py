"""Versioned SQL migrations for ragdb: ordered, checksummed, serialized by an advisory lock.

Files live in `migrations/` as `NNNN_name.sql`. Each runs in its own transaction together with the row
that records it, so a failure leaves nothing half-applied. A file whose first line is
`-- ragfr:no-transaction` holds ONE statement that PostgreSQL refuses inside a transaction block (e.g.
CREATE INDEX CONCURRENTLY); it runs alone and is recorded right after. Parameters (dimension, model)
reach the SQL as the session settings `ragfr.dims`, `ragfr.embedding_model` and `ragfr.vector_index`, so the
files themselves are constant and their checksums mean something.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from ragfr.db.connect import connect, redact
from ragfr.db.locks import advisory_holders, any_relation_holders
from ragfr.embed.spec import parse_spec
from ragfr.errors import ConfigError, DatabaseError, EmbeddingSpaceError

log = logging.getLogger(__name__)

DEFAULT_DIMS = 1024
# The chart's embedding.model: a space made by hand without --embedding-model is one the chart's Job accepts.
DEFAULT_MODEL = "ollama:bge-m3:567m"
RUNBOOK = "docs/runbooks/embedding-migration.md"
# pg_advisory_lock key shared by every `ragfr migrate` on a database ("ragfr" in ASCII, as an int).
LOCK_KEY = 0x7261_6766_72
NO_TRANSACTION_MARK = "-- ragfr:no-transaction"
_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path
    sql: str
    sha256: str

    @property
    def transactional(self) -> bool:
        return not self.sql.startswith(NO_TRANSACTION_MARK)


@dataclass
class MigrateReport:
    applied: list[str] = field(default_factory=list)
    already: int = 0
    app_role: str | None = None
    app_role_tables: int = 0
    dims: int = DEFAULT_DIMS
    model: str = DEFAULT_MODEL


def migrations_dir() -> Path:
    """`$RAGFR_MIGRATIONS_DIR`, else the SQL shipped inside the package (a link to the repo's migrations/)."""
    override = os.environ.get("RAGFR_MIGRATIONS_DIR")
    path = Path(override) if override else Path(__file__).resolve().parent.parent / "migrations"
    if not path.is_dir():
        raise ConfigError(f"migrations directory not found: {path}")
    return path


def discover(directory: Path | None = None) -> list[Migration]:
    directory = directory or migrations_dir()
    found: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _FILE_NAME.match(path.name)
        if not match:
            raise ConfigError(f"migration file name {path.name!r} is not NNNN_lower_snake.sql")
        data = path.read_bytes()
        version = int(match.group(1))
        if version in found:
            raise ConfigError(f"two migrations share version {version}: {found[version].path.name}, {path.name}")
        digest = hashlib.sha256(data).hexdigest()
        found[version] = Migration(version, match.group(2), path, data.decode("utf-8"), digest)
    return [found[v] for v in sorted(found)]


# Runs under the migration lock after the migrations and the grants: the steps of `ragfr migrate` that
# belong to a higher layer (ragfr.vector_index.upgrade: the vector indexes).
Then = Callable[[psycopg.Connection, MigrateReport, list[Migration]], None]


def migrate(
    dsn: str,
    dims: int | None = None,
    model: str | None = None,
    *,
    directory: Path | None = None,
    say: Callable[[str], None] = log.info,
    lock_wait_s: float = 600.0,
    lock_timeout_s: float = 30.0,
    app_role: str | None = None,
    vector_index: str | None = None,
    then: Then | None = None,
) -> MigrateReport:
    """Bring the database's schema at `dsn` to the newest. Safe to run concurrently and repeatedly.
    `ragfr migrate` is ragfr.vector_index.upgrade.migrate: this, then the vector indexes (`then`).

    Another `ragfr migrate` is waited for at most `lock_wait_s`; each migration's statements wait at most
    `lock_timeout_s` for a table lock (a schema change queued behind a long query would stall every query
    queued behind it). Either limit ends with an error naming the sessions in the way; nothing of the
    migration that waited is applied. `app_role`: then grant that role exactly the application's
    privileges (ragfr.db.approle), on every table that exists after the migrations. `vector_index`: the
    precision migration 0011 creates the index in (halfvec when None)."""
    if dims is not None and not 1 <= dims <= 16000:
        raise ConfigError(f"--dims must be between 1 and 16000 (pgvector's limit), got {dims}")
    if model is not None:
        model = parse_spec(model).model_id
    migrations = discover(directory)
    with connect(dsn, autocommit=True) as conn:
        _check_server(conn)
        _take_migration_lock(conn, lock_wait_s, say)
        try:
            report = _migrate_locked(conn, migrations, dims, model, say, lock_timeout_s, vector_index or "halfvec")
            # Grants first: Open WebUI waits for them (the chart's wait-for-grants), and an index build on a
            # filled database takes minutes per 100k chunks, during which the current index keeps serving.
            if app_role is not None:
                from ragfr.db.approle import grant

                report.app_role, report.app_role_tables = app_role, grant(conn, app_role)
            if then is not None:
                then(conn, report, migrations)
            return report
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))


def _take_migration_lock(conn: psycopg.Connection, wait_s: float, say: Callable[[str], None]) -> None:
    deadline = time.monotonic() + wait_s
    next_report = 0.0
    while not conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()[0]:  # type: ignore[index]
        now = time.monotonic()
        holders = advisory_holders(conn, LOCK_KEY)
        if now > deadline:
            raise DatabaseError(
                f"another `ragfr migrate` kept the migration lock for more than {wait_s:g} s ({holders}); "
                "nothing was applied. Wait for it, or end it with SELECT pg_terminate_backend(pid), then re-run"
            )
        if now >= next_report:
            say(f"another `ragfr migrate` holds the migration lock on this database ({holders}); waiting for it")
            next_report = now + 30
        time.sleep(1)


def _check_server(conn: psycopg.Connection) -> None:
    row = conn.execute(
        "SELECT current_setting('server_version_num')::int, pg_encoding_to_char(encoding), datctype"
        " FROM pg_database WHERE datname = current_database()"
    ).fetchone()
    assert row is not None
    version, encoding, ctype = row
    if version < 150000:
        raise DatabaseError(f"PostgreSQL {version // 10000} is too old: ragfr needs 15 or newer")
    if encoding != "UTF8":
        raise DatabaseError(f"database encoding is {encoding}; ragfr needs UTF8 (CREATE DATABASE ... ENCODING 'UTF8')")
    if ctype in ("C", "POSIX"):
        raise DatabaseError(
            f"database LC_CTYPE is {ctype}: PostgreSQL would not classify accented letters, so French words "
            "would be split; create it with a UTF-8 locale, e.g. LC_CTYPE 'C.UTF-8' TEMPLATE template0"
        )
    if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() is None:
        raise DatabaseError(
            "missing extension: pgvector ('vector') is not installed on this server; use the ragdb image "
            "(images/ragdb) or `make db`"
        )


def _migrate_locked(
    conn: psycopg.Connection,
    migrations: list[Migration],
    dims: int | None,
    model: str | None,
    say: Callable[[str], None],
    lock_timeout_s: float,
    vector_index: str,
) -> MigrateReport:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS ragfr_schema_migrations ("
        " version integer PRIMARY KEY, name text NOT NULL, sha256 text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())"
    )
    applied = {v: (n, s) for v, n, s in conn.execute("SELECT version, name, sha256 FROM ragfr_schema_migrations")}
    known = {m.version: m for m in migrations}
    unknown = sorted(set(applied) - set(known))
    if unknown:
        raise DatabaseError(
            f"the database has migration(s) {unknown} that this ragfr does not know (was it migrated by a newer "
            "ragfr?); refusing to touch it"
        )
    for m in migrations:
        if m.version in applied and applied[m.version][1] != m.sha256:
            raise DatabaseError(
                f"migration {m.path.name} was changed after it was applied (recorded sha256 "
                f"{applied[m.version][1][:12]}…, file {m.sha256[:12]}…); applied migrations are immutable: "
                "restore the file and add a new migration instead"
            )
    report = MigrateReport(already=len(applied))
    report.dims, report.model = _resolve_space(conn, dims, model)
    conn.execute("SELECT set_config('ragfr.dims', %s, false)", (str(report.dims),))
    conn.execute("SELECT set_config('ragfr.embedding_model', %s, false)", (report.model,))
    conn.execute("SELECT set_config('ragfr.vector_index', %s, false)", (vector_index,))
    for m in migrations:
        if m.version in applied:
            continue
        say(f"applying {m.path.name}")
        try:
            conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(lock_timeout_s * 1000)}ms",))
            if m.transactional:
                with conn.transaction():
                    conn.execute(m.sql.encode())
                    _record(conn, m)
            else:
                conn.execute(m.sql.encode())
                _record(conn, m)
        except psycopg.errors.LockNotAvailable as exc:
            raise DatabaseError(
                f"migration {m.path.name} waited more than {lock_timeout_s:g} s for a table lock "
                f"({any_relation_holders(conn)}); it was rolled back, nothing of it applied. Re-run when that "
                "session is done (the chart's migrations Job retries), or end it with "
                "SELECT pg_terminate_backend(pid)"
            ) from exc
        except psycopg.Error as exc:
            raise DatabaseError(f"migration {m.path.name} failed and was rolled back: {_pg_message(exc)}") from exc
        report.applied.append(m.path.name)
    return report


def _record(conn: psycopg.Connection, m: Migration) -> None:
    conn.execute(
        "INSERT INTO ragfr_schema_migrations (version, name, sha256) VALUES (%s, %s, %s)", (m.version, m.name, m.sha256)
    )


def _resolve_space(conn: psycopg.Connection, dims: int | None, model: str | None) -> tuple[int, str]:
    """The embedding space to create, or the stored one, which a request must not contradict."""
    stored = None
    if conn.execute("SELECT to_regclass('ragfr_embedding_space')").fetchone() != (None,):
        stored = conn.execute("SELECT dims, model FROM ragfr_embedding_space").fetchone()
    if stored is None:
        existing = conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass('document_chunk')"
            " AND attname = 'vector' AND NOT attisdropped"
        ).fetchone()
        if existing is not None and dims is not None and existing[0] != dims:
            raise EmbeddingSpaceError(
                f"document_chunk.vector already has {existing[0]} dimensions, --dims asks for {dims}; "
                f"nothing was changed. To change the embedding model see {RUNBOOK}"
            )
        return (dims or (existing[0] if existing else DEFAULT_DIMS), model or DEFAULT_MODEL)
    have_dims, have_model = stored
    if dims is not None and dims != have_dims:
        raise EmbeddingSpaceError(
            f"the database's embedding space is {have_model} with {have_dims} dimensions, --dims asks for {dims}; "
            f"nothing was changed. To change the embedding model see {RUNBOOK}"
        )
    if model is not None and model != have_model:
        raise EmbeddingSpaceError(
            f"the database's embedding space is {have_model}, --embedding-model asks for {model}; nothing was "
            f"changed. To change the embedding model see {RUNBOOK}"
        )
    return have_dims, have_model


def _pg_message(exc: psycopg.Error) -> str:
    diag = exc.diag
    text = diag.message_primary or str(exc).strip().splitlines()[0]
    if diag.message_hint:
        text += f" (hint: {diag.message_hint})"
    return text


def applied_versions(dsn: str) -> set[int] | None:
    """Versions recorded in ragfr_schema_migrations, or None when the database has no ragfr schema."""
    with connect(dsn, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('ragfr_schema_migrations')").fetchone() == (None,):
            return None
        return {row[0] for row in conn.execute("SELECT version FROM ragfr_schema_migrations")}


def schema_version(dsn: str) -> int | None:
    """Highest applied migration version, or None when the database has no ragfr schema."""
    with connect(dsn, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('ragfr_schema_migrations')").fetchone() == (None,):
            return None
        row = conn.execute("SELECT max(version) FROM ragfr_schema_migrations").fetchone()
        return None if row is None else row[0]


__all__ = [
    "DEFAULT_DIMS", "DEFAULT_MODEL", "MigrateReport", "applied_versions", "discover", "migrate", "redact",
    "schema_version",
]
