"""The least-privilege role Open WebUI connects as: what it may do in ragfr's database, granted exactly.

Open WebUI inserts, updates and deletes chunks in document_chunk and reads the ragfr tables retrieval uses.
It owns nothing and may change no schema: no CREATE on the schema (checked: refused when PUBLIC still has
it), no TRUNCATE, no ownership (an owner may ALTER, DROP and CREATE INDEX). The BM25 tables are written by
the triggers of document_chunk, which run as the schema owner (migration 0012), so the role gets no write
access to them, and nothing that would let it make them disagree with the chunks (migration 0015):
* no temporary tables: TEMP on the database is revoked from PUBLIC and from the role (checked), so it has
  no table to attach ragfr's owner-rights trigger functions to;
* no EXECUTE on any SECURITY DEFINER function of the schema (revoked from PUBLIC and the role; checked);
* INSERT and UPDATE only on the columns Open WebUI writes (INSERT_COLUMNS): ragfr's columns (fts, fts_len,
  embedding_model, an embedding migration's shadow columns) are filled by the row trigger, and a writer
  that set fts without changing the text would otherwise make the statistics follow its values.

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
# The columns of document_chunk it may INSERT and UPDATE: Open WebUI 0.12.4's DocumentChunk model. The fill
# trigger (migrations 0003/0009) computes fts, fts_len and embedding_model (from ragfr.writer_model).
INSERT_COLUMNS = ("id", "vector", "collection_name", "text", "vmetadata")
CREATE_HINT = ("create it first (the chart does: ragdb's roles init container, CloudNativePG's managed.roles; "
               "an external server: CREATE ROLE {name} LOGIN PASSWORD '...', see docs/reference/configuration.md, "
               "'Database roles')")


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
        cols = sql.SQL(", ").join(sql.Identifier(c) for c in INSERT_COLUMNS)
        for table in WRITABLE:
            conn.execute(sql.SQL("GRANT INSERT ({c}), UPDATE ({c}), DELETE ON {t} TO {r}").format(
                c=cols, t=sql.Identifier(table), r=ident))
        _no_temp_tables(conn, role, ident, db)
        _no_definer_functions(conn, role, ident)
        # Tables the owner creates before the next run (e.g. a hand-run migration) are readable at once.
        conn.execute(sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA {} GRANT SELECT ON TABLES TO {}").format(sch, ident))
        readable = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
            " AND has_table_privilege(%s, format('%%I.%%I', schemaname, tablename), 'SELECT')",
            (role,),
        ).fetchone()
    assert readable is not None
    return int(readable[0])


def _no_temp_tables(conn: psycopg.Connection, role: str, ident: sql.Identifier, db: sql.Identifier) -> None:
    """Revoke TEMP on the database from PUBLIC and the role; refuse when it still has it. A temporary table
    is a table the role owns: it could attach triggers to it (migration 0015's header)."""
    conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC, {}").format(db, ident))
    row = conn.execute(
        "SELECT has_database_privilege(%s, current_database(), 'TEMP'),"
        " pg_get_userbyid(datdba), pg_get_userbyid(datdba) = current_user FROM pg_database"
        " WHERE datname = current_database()", (role,)).fetchone()
    assert row is not None
    temp, owner, we_own = row
    if temp:
        how = (f"it still gets it from a role it belongs to, or from a grant by another role; as {owner} (the "
               f"database owner) or a superuser, find the grant with \\l and REVOKE it")
        if not we_own:
            how = (f"this role ({conn.info.user}) does not own database {conn.info.dbname} ({owner} does) and may "
                   f"not revoke it; as {owner} or a superuser: REVOKE TEMPORARY ON DATABASE {db.as_string(conn)} "
                   f"FROM PUBLIC, {ident.as_string(conn)}")
        raise ConfigError(
            f"--app-role {role} may create temporary tables in database {conn.info.dbname}, to which it could "
            f"attach the triggers that run as the owner: {how}; then re-run")


def _no_definer_functions(conn: psycopg.Connection, role: str, ident: sql.Identifier) -> None:
    """No SECURITY DEFINER function of the schema may be executable by the role (migration 0015 revoked it
    from PUBLIC; a later migration's new function is covered here): only the owner's triggers call them."""
    definers = [r[0] for r in conn.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace"
        " AND p.prosecdef AND p.proowner = (SELECT oid FROM pg_roles WHERE rolname = current_user) ORDER BY 1")]
    for fn in definers:
        conn.execute(sql.SQL("REVOKE EXECUTE ON FUNCTION {} FROM PUBLIC, {}").format(sql.SQL(fn), ident))
    left = [r[0] for r in conn.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace"
        " AND p.prosecdef AND has_function_privilege(%s, p.oid, 'EXECUTE') ORDER BY 1", (role,))]
    if left:
        raise ConfigError(
            f"--app-role {role} may execute the SECURITY DEFINER function(s) {', '.join(left)} (through a role it "
            "belongs to, or owned by another role): as their owner or a superuser, REVOKE EXECUTE ON FUNCTION ... "
            f"FROM PUBLIC, {ident.as_string(conn)} and any role it belongs to; then re-run")


def move_column_privileges(conn: psycopg.Connection, table: str, source: str, target: str) -> int:
    """Give `target` the column privileges other roles hold on `source`, and take them from `source`;
    returns how many were moved. A column privilege belongs to the column, not to its name: when the
    embedding migration's switch renames `vector` away and its shadow column to `vector`, the application
    role's INSERT/UPDATE on `vector` (grant() above) would stay with the old column and Open WebUI could no
    longer write vectors. The switch and its inverse (ragfr.embmigrate.swap) call this after their renames."""
    rows = conn.execute(
        "SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END, a.privilege_type"
        "  FROM pg_attribute t, aclexplode(t.attacl) a"
        " WHERE t.attrelid = %s::regclass AND t.attname = %s AND NOT t.attisdropped"
        "   AND a.grantee <> (SELECT relowner FROM pg_class WHERE oid = %s::regclass)",
        (table, source, table)).fetchall()
    for grantee, privilege in rows:
        who = sql.SQL("PUBLIC") if grantee == "PUBLIC" else sql.Identifier(grantee)
        for verb, column in (("GRANT {p} ({c}) ON {t} TO {w}", target), ("REVOKE {p} ({c}) ON {t} FROM {w}", source)):
            conn.execute(sql.SQL(verb).format(p=sql.SQL(privilege), c=sql.Identifier(column),
                                              t=sql.Identifier(table), w=who))
    return len(rows)
