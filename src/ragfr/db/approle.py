"""The least-privilege role Open WebUI connects as: what it may do in ragfr's database, granted exactly.

Open WebUI inserts, updates and deletes chunks in document_chunk and reads the ragfr tables retrieval uses.
It owns nothing and may change no schema: no CREATE on the schema (checked: refused when PUBLIC still has
it), no TRUNCATE, no ownership (an owner may ALTER, DROP and CREATE INDEX). The BM25 tables are written by
the triggers of document_chunk, which run as the schema owner (migration 0012), so the role gets no write
access to them.

The grants are re-applied after the migrations on every `ragfr migrate --app-role NAME`, in one transaction:
first everything on the schema's tables is revoked from the role, then the exact set is granted, so the
role converges to this set whatever it held before, and tables a new migration adds are covered by the
next run (plus default privileges for tables the owner creates in between). Creating the role and its
password is the deployment's job (ragdb's roles script, CloudNativePG's managed roles, or the operator of
an external server): this role here is the schema owner, which may not create roles.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from ragfr.errors import ConfigError, DatabaseError

# The tables the role may write. Everything else in the schema is read-only for it.
WRITABLE = ("document_chunk",)
CREATE_HINT = ("create it first (the chart does: ragdb's roles init container, CloudNativePG's managed.roles; "
               "an external server: CREATE ROLE {name} LOGIN PASSWORD '...', see docs/install.md)")


def grant(conn: psycopg.Connection, role: str) -> int:
    """Grant `role` exactly the application's privileges on the current database and schema; returns the
    number of tables it may read. `conn` is the schema owner's, in autocommit mode."""
    if not role or role.strip() != role:
        raise ConfigError(f"--app-role {role!r}: give a role name")
    row = conn.execute(
        "SELECT rolsuper, rolcreaterole, rolcreatedb, rolbypassrls, pg_has_role(%s, current_user, 'MEMBER'),"
        " %s = current_user FROM pg_roles WHERE rolname = %s",
        (role, role, role),
    ).fetchone()
    if row is None:
        raise DatabaseError(f"role {role} does not exist: " + CREATE_HINT.format(name=role))
    superuser, createrole, createdb, bypassrls, member_of_owner, is_owner = row
    powers = [n for n, on in (("SUPERUSER", superuser), ("CREATEROLE", createrole), ("CREATEDB", createdb),
                              ("BYPASSRLS", bypassrls)) if on]
    if powers:
        raise ConfigError(f"--app-role {role} has {', '.join(powers)}: that is not least privilege; "
                          f"ALTER ROLE {sql.Identifier(role).as_string(conn)} NO{' NO'.join(powers)}")
    if is_owner or member_of_owner:
        raise ConfigError(f"--app-role {role} is the schema owner (or a member of it): the application role must be "
                          "a separate role, or it could change the schema")
    ident = sql.Identifier(role)
    schema = conn.execute("SELECT current_schema()").fetchone()
    assert schema is not None and schema[0] is not None
    sch = sql.Identifier(schema[0])
    db = sql.Identifier(conn.info.dbname)
    with conn.transaction():
        conn.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}").format(sch, ident))
        conn.execute(sql.SQL("REVOKE ALL ON ALL SEQUENCES IN SCHEMA {} FROM {}").format(sch, ident))
        conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA {} FROM {}").format(sch, ident))
        # 0012's SECURITY DEFINER triggers resolve names in this schema: a role that may create objects in it
        # could plant a function of an exact argument type there and have the owner run it (CVE-2018-1058).
        # PUBLIC keeps CREATE on `public` in clusters upgraded from PostgreSQL < 15 or restored from them.
        creates = conn.execute("SELECT has_schema_privilege(%s, current_schema(), 'CREATE')", (role,)).fetchone()
        if creates is not None and creates[0]:
            raise ConfigError(
                f"--app-role {role} may still CREATE in schema {schema[0]} (through PUBLIC or a role it belongs to): "
                f"the triggers that run as the owner would resolve names it plants there; as the schema owner or "
                f"a superuser: REVOKE CREATE ON SCHEMA {sch.as_string(conn)} FROM PUBLIC (PostgreSQL 15's default), "
                "then re-run")
        conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(db, ident))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sch, ident))
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(sch, ident))
        for table in WRITABLE:
            conn.execute(sql.SQL("GRANT INSERT, UPDATE, DELETE ON {} TO {}").format(sql.Identifier(table), ident))
        # Tables the owner creates before the next run (e.g. a hand-run migration) are readable at once.
        conn.execute(sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA {} GRANT SELECT ON TABLES TO {}").format(sch, ident))
        readable = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
            " AND has_table_privilege(%s, format('%%I.%%I', schemaname, tablename), 'SELECT')",
            (role,),
        ).fetchone()
    assert readable is not None
    return int(readable[0])
