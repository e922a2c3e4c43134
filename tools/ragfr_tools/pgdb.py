"""Fresh databases on a test or benchmark cluster, made ONE way: from template0, UTF-8 with the C.UTF-8
locale (ragfr refuses a C-locale database, whose word splitting would cut accented French words), and
dropped WITH (FORCE) so a connection left open by a failed test cannot keep one alive."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql

from ragfr.db.connect import with_database


def admin(dsn: str) -> psycopg.Connection:
    """An autocommit session on the cluster's `postgres` database (CREATE/DROP DATABASE run outside a block)."""
    return psycopg.connect(with_database(dsn, "postgres"), autocommit=True)


def create_database(dsn: str, name: str, *, owner: str | None = None, replace: bool = False,
                    template: str = "template0") -> str:
    """Create `name` (dropping a leftover first when `replace`); the DSN of it, with `dsn`'s credentials.
    `template`: another database to clone (a migrated template), which carries its own encoding."""
    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if owner:
        statement += sql.SQL(" OWNER {}").format(sql.Identifier(owner))
    statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    if template == "template0":
        statement += sql.SQL(" ENCODING 'UTF8' LOCALE 'C.UTF-8'")
    with admin(dsn) as conn:
        if replace:
            drop_database(dsn, name, conn)
        conn.execute(statement)
    return with_database(dsn, name)


def drop_database(dsn: str, name: str, conn: psycopg.Connection | None = None) -> None:
    statement = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    if conn is not None:
        conn.execute(statement)
        return
    with admin(dsn) as own:
        own.execute(statement)


@contextmanager
def fresh_database(dsn: str, prefix: str) -> Iterator[str]:
    """A new empty database named `<prefix>_<12 hex>` for the block; dropped afterwards, whatever happened."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    url = create_database(dsn, name)
    try:
        yield url
    finally:
        drop_database(dsn, name)
