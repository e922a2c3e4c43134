"""Open WebUI's least-privilege role (migration 0012, ragfr.db.approle, files/ragdb-roles.sh), on the real
database made the way the chart makes it: owner role and database by ragdb-init.sh, the application role by
ragdb-roles.sh (both as the superuser), the schema migrated AS THE OWNER with `--app-role` (like the
migrations Job). The role then writes chunks the way Open WebUI does (plain INSERT/UPDATE/DELETE naming its
model in ragfr.writer_model), the triggers keep BM25 exact, ragfr's retrieval searches as that role, and
every schema change is refused."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from tests.support.backup import RAGFR, Release, fake_release
from tests.support.backup import run_script as _run
from tests.support.chart import CHART

from ragfr.embed import load_embedder
from ragfr.errors import ConfigError, DatabaseError
from ragfr.filters.grammar import Condition
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.hybrid import search
from ragfr.vector_index.upgrade import migrate

E5 = "local:multilingual-e5-small"
DOCS = {
    "declaration": "Déclaration du sinistre. L'assuré doit déclarer tout sinistre à l'assureur dans les cinq jours.",
    "franchise": "Franchise. Une franchise de 150 euros reste à la charge de l'assuré pour chaque dommage.",
    "vol": "Vol. En cas de vol, la plainte doit être déposée dans les 48 heures auprès des autorités.",
}


@pytest.fixture
def release(pg_dsn: str, tmp_path: Path) -> Iterator[Release]:
    with fake_release(pg_dsn, tmp_path) as rel:
        yield rel


@pytest.fixture(scope="module")
def e5():
    return load_embedder(E5, cache=False)


def _migrated(release: Release) -> None:
    report = migrate(release.ragfr_url, 384, E5, app_role=release.names["app_user"])
    assert report.app_role_tables >= 7, report


def _stats(release: Release) -> tuple[int, int, int]:
    with psycopg.connect(release.ragfr_url) as conn:
        row = conn.execute(
            "SELECT (SELECT coalesce(sum(n_docs), 0) FROM ragfr_collection_stats WHERE collection_name = 'kb'),"
            " (SELECT count(*) FROM ragfr_term_stats WHERE collection_name = 'kb'),"
            " (SELECT coalesce(sum(n), 0) FROM ragfr_lex_blocks WHERE collection_name = 'kb')").fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def _vec(values: list[float]) -> str:
    return "[" + ",".join(f"{x:.7f}" for x in values) + "]"


def test_the_application_role_writes_and_searches_like_open_webui(release: Release, e5) -> None:
    _migrated(release)
    with psycopg.connect(release.app_url, autocommit=True) as conn:
        # What Open WebUI's pgvector client sends: the stock columns only, one statement per batch, its
        # model named in the session (the chart puts -c ragfr.writer_model=... in its URL).
        conn.execute("SELECT set_config('ragfr.writer_model', %s, false)", (E5,))
        vectors = e5.embed_passages(list(DOCS.values()))
        conn.execute(
            "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata)"
            " SELECT i, v::vector, 'kb', t, m::jsonb FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[])"
            " AS x(i, v, t, m)",
            (list(DOCS), [_vec(v) for v in vectors], list(DOCS.values()),
             [json.dumps({"name": k}) for k in DOCS]))
        n_docs, n_terms, n_postings = _stats(release)
        assert n_docs == 3 and n_terms > 10 and n_postings >= n_terms  # the statement triggers ran (as the owner)

        result = search(conn, "Comment déclarer un sinistre ?", collections=["kb"], embedder=e5,
                        config=SearchConfig(k=3, rerank=False))
        assert [h.id for h in result.hits][0] == "declaration"
        assert result.hits[0].ranks.get("lexical") == 1 and result.hits[0].ranks.get("semantic") is not None
        # a filtered search reads the declared filters (ragfr_filter_index) as this role too
        result = search(conn, "Comment déclarer un sinistre ?", collections=["kb"], embedder=e5,
                        conditions=(Condition("name", "eq", ("vol",)),), config=SearchConfig(k=3, rerank=False))
        assert [h.id for h in result.hits] == ["vol"] and result.arms["semantic"].filter_index is None

        conn.execute("UPDATE document_chunk SET text = 'Vol. Plainte sous 48 heures.' WHERE id = 'vol'")
        conn.execute("UPDATE document_chunk SET vmetadata = '{\"name\": \"franchise\", \"v\": 2}' WHERE id = 'franchise'")
        assert _stats(release)[0] == 3 and _stats(release)[1] < n_terms
        conn.execute("DELETE FROM document_chunk WHERE collection_name = 'kb'")
        assert _stats(release) == (0, 0, 0)


REFUSED = [
    "CREATE INDEX idx_evil ON document_chunk (collection_name)",
    "CREATE INDEX IF NOT EXISTS idx_document_chunk_collection_name ON document_chunk (collection_name)",
    "DROP INDEX idx_document_chunk_vector",
    "DROP TABLE document_chunk",
    "ALTER TABLE document_chunk ADD COLUMN evil text",
    "ALTER TABLE document_chunk DISABLE TRIGGER USER",
    "TRUNCATE document_chunk",
    "CREATE TABLE evil (x int)",
    "INSERT INTO ragfr_lex_blocks VALUES ('kb', 'x', 1, 1, 1, 1, 1, 1, '{1}', '{1}', '{1}')",
    "DELETE FROM ragfr_lex_docs",
    "DELETE FROM ragfr_term_stats",
    "UPDATE ragfr_collection_stats SET n_docs = 0",
    "UPDATE ragfr_embedding_space SET model = 'x'",
    "DELETE FROM ragfr_schema_migrations",
    "INSERT INTO ragfr_filter_index (key, value, index_name) VALUES ('a', 'b', 'idx_document_chunk_vector_f_0123456789ab')",
    "CREATE OR REPLACE FUNCTION ragfr_bm25_after_truncate() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$",
]


@pytest.mark.parametrize("statement", REFUSED)
def test_the_application_role_cannot_change_the_schema_or_the_statistics(release: Release, statement: str) -> None:
    _migrated(release)
    with psycopg.connect(release.app_url, autocommit=True) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(statement)


def test_every_statement_trigger_of_document_chunk_runs_as_the_owner_with_a_pinned_search_path(release: Release) -> None:
    """A later migration that CREATE OR REPLACEs one of these functions without repeating SECURITY DEFINER
    and the search_path makes the application role's writes fail: this names the function."""
    _migrated(release)
    with psycopg.connect(release.ragfr_url) as conn:
        rows = conn.execute(
            "SELECT DISTINCT p.proname, p.prosecdef, p.proconfig, pg_get_userbyid(p.proowner) FROM pg_trigger t"
            " JOIN pg_proc p ON p.oid = t.tgfoid WHERE t.tgrelid = 'document_chunk'::regclass"
            " AND NOT t.tgisinternal AND (t.tgtype & 1) = 0 ORDER BY 1").fetchall()
    assert len(rows) >= 8
    for name, definer, config, owner in rows:
        assert definer, f"{name} is SECURITY INVOKER: the application role cannot write the BM25 tables through it"
        assert config == ["search_path=public, pg_temp"], (name, config)
        assert owner == release.names["ragfr_user"], (name, owner)


def test_the_role_may_read_every_table_and_write_only_document_chunk(release: Release) -> None:
    _migrated(release)
    app = release.names["app_user"]
    with psycopg.connect(release.ragfr_url, autocommit=True) as conn:
        # Something it held before (a hand-made grant) is taken away by the next run: the set converges.
        conn.execute(sql.SQL("GRANT INSERT, TRUNCATE ON ragfr_lex_blocks TO {}").format(sql.Identifier(app)))
        migrate(release.ragfr_url, app_role=app)
        privileges = {t: (r, w) for t, r, w in conn.execute(
            "SELECT tablename, has_table_privilege(%s, tablename, 'SELECT'),"
            " has_table_privilege(%s, tablename, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')"
            " FROM pg_tables WHERE schemaname = 'public'", (app, app))}
        # A table the owner adds later (a new migration run by hand before the Job's next run) is readable.
        conn.execute("CREATE TABLE ragfr_later (x int)")
        assert conn.execute("SELECT has_table_privilege(%s, 'ragfr_later', 'SELECT')", (app,)).fetchone() == (True,)
    assert {t for t, (r, _) in privileges.items() if not r} == set(), privileges
    assert {t for t, (_, w) in privileges.items() if w} == {"document_chunk"}, privileges
    assert {"ragfr_lex_blocks", "ragfr_lex_docs", "ragfr_term_stats", "ragfr_collection_stats",
            "ragfr_embedding_space"} <= set(privileges)


def test_unfit_roles_are_refused_with_one_line(release: Release, pg_dsn: str) -> None:
    migrate(release.ragfr_url, 384, E5)
    with pytest.raises(DatabaseError, match="role nobody_here does not exist: create it first"):
        migrate(release.ragfr_url, app_role="nobody_here")
    with pytest.raises(ConfigError, match="is the schema owner"):
        migrate(release.ragfr_url, app_role=release.names["ragfr_user"])
    superuser = psycopg.conninfo.conninfo_to_dict(pg_dsn)["user"]
    with pytest.raises(ConfigError, match="has SUPERUSER"):
        migrate(release.ragfr_url, app_role=str(superuser))


def test_a_schema_public_may_create_in_is_refused_until_revoked(release: Release) -> None:
    """A cluster upgraded from PostgreSQL < 15 keeps CREATE on `public` for PUBLIC: the application role could
    then plant objects where 0012's owner-rights triggers resolve names."""
    migrate(release.ragfr_url, 384, E5)
    app = release.names["app_user"]
    with psycopg.connect(release.ragfr_url, autocommit=True) as conn:
        conn.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")  # the pre-15 default
    with pytest.raises(ConfigError, match=f"--app-role {app} may still CREATE in schema public .*"
                                          "REVOKE CREATE ON SCHEMA \"public\" FROM PUBLIC"):
        migrate(release.ragfr_url, app_role=app)
    with psycopg.connect(release.ragfr_url, autocommit=True) as conn:
        assert conn.execute("SELECT has_table_privilege(%s, 'document_chunk', 'INSERT')", (app,)).fetchone() == (
            False,), "the refused run granted nothing (one transaction)"
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    assert migrate(release.ragfr_url, app_role=app).app_role == app


def test_open_webui_waits_as_its_role_until_the_grants_exist(release: Release) -> None:
    """The chart's wait-for-schema init container connects as the application role: all migrations applied
    but no grant yet is "not ready", not an error that restarts the pod with a traceback."""
    migrate(release.ragfr_url, 384, E5)  # migrated, but no --app-role yet
    wait = [str(RAGFR), "migrate", "--wait", "--timeout", "3", "--dsn", release.app_url]
    done = _run(wait, {})
    assert done.returncode != 0
    assert "may not read the ragfr schema yet" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    granted = subprocess.run([str(RAGFR), "migrate", "--dsn", release.ragfr_url, "--app-role", release.names["app_user"]],
                             capture_output=True, text=True, check=False)
    assert granted.returncode == 0, granted.stderr
    assert ("INSERT/UPDATE/DELETE on document_chunk (INSERT/UPDATE of Open WebUI's columns only), no TEMP, "
            "nothing else") in granted.stdout
    done = _run(wait, {})
    assert done.returncode == 0, done.stderr


def test_the_exporter_role_reads_statistics_but_no_data(release: Release) -> None:
    """postgres_exporter's role (ragdb.metrics.user), made by files/ragdb-roles.sh: pg_monitor only."""
    _migrated(release)
    q = release.app_url.split("@", 1)[1]
    url = f"postgresql://{release.names['monitor_user']}:{release.init_env['MONITOR_PASSWORD']}@{q}"
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) > 0 FROM pg_stat_database").fetchone() == (True,)
        # pg_read_all_stats (in pg_monitor): other sessions' queries are visible, which the exporter reports.
        assert conn.execute("SELECT pg_has_role('pg_monitor', 'MEMBER')").fetchone() == (True,)
        for statement in ("SELECT count(*) FROM document_chunk", "SELECT count(*) FROM ragfr_lex_blocks",
                          "CREATE TABLE evil (x int)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    # The roles script runs on every migrations Job run: again is fine and keeps the role usable.
    again = _run(["sh", str(CHART / "files" / "ragdb-roles.sh")],
                 {**release.init_env, "PGUSER": release.init_env["POSTGRES_USER"]})
    assert again.returncode == 0, again.stderr
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (release.names["monitor_user"],)
