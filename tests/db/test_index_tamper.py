"""Open WebUI's least-privilege role cannot wipe or forge the BM25 index (issue 25, item 1; migration 0015,
ragfr.db.approle, `ragfr verify-index`), on a database made the way the chart makes it (as
tests/db/test_app_role.py: ragdb-init.sh and ragdb-roles.sh as the superuser, `ragfr migrate --app-role`
as the owner). Each attack runs AS THE APPLICATION ROLE. Before migration 0015 and the grants that go with
it, (a) emptied every collection's index through a temporary table's TRUNCATE trigger, (b) added postings
and document frequencies to another collection through an AFTER INSERT one, (c) let the statistics follow
a forged fts, and (d) the role could create temporary tables at all."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from tests.support.backup import RAGFR, Release, fake_release
from tests.support.lexidx import block_problems, indexed_postings, recounted_postings

from ragfr.db.approle import move_column_privileges
from ragfr.db.connect import with_database
from ragfr.embed import load_embedder
from ragfr.errors import ConfigError
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.hybrid import search
from ragfr.vector_index.upgrade import migrate

E5 = "local:multilingual-e5-small"
KB = {
    "declaration": "Déclaration du sinistre. L'assuré doit déclarer tout sinistre à l'assureur dans les cinq jours.",
    "franchise": "Franchise. Une franchise de 150 euros reste à la charge de l'assuré pour chaque dommage.",
    "vol": "Vol. En cas de vol, la plainte doit être déposée dans les 48 heures auprès des autorités.",
}
OTHER = {
    "o1": "Résiliation. Le contrat peut être résilié chaque année à la date d'échéance.",
    "o2": "Prime. La prime est payable d'avance, chaque année, au siège de l'assureur.",
}
QUERIES = ("Comment déclarer un sinistre ?", "franchise dommage", "plainte pour vol")


@pytest.fixture
def release(pg_dsn: str, tmp_path: Path) -> Iterator[Release]:
    with fake_release(pg_dsn, tmp_path) as rel:
        yield rel


@pytest.fixture(scope="module")
def e5() -> Any:
    return load_embedder(E5, cache=False)


def _vec(values: list[float]) -> str:
    return "[" + ",".join(f"{x:.7f}" for x in values) + "]"


def _write(conn: psycopg.Connection[Any], e5: Any, collection: str, docs: dict[str, str]) -> None:
    """What Open WebUI's pgvector client sends: its five columns, one statement, its model in the session."""
    conn.execute("SELECT set_config('ragfr.writer_model', %s, false)", (E5,))
    vectors = e5.embed_passages(list(docs.values()))
    conn.execute(
        "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata)"
        " SELECT i, v::vector, %s, t, m::jsonb FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[])"
        " AS x(i, v, t, m)",
        (collection, list(docs), [_vec(v) for v in vectors], list(docs.values()),
         [json.dumps({"name": k}) for k in docs]))


def _loaded(release: Release, e5: Any) -> None:
    migrate(release.ragfr_url, 384, E5, app_role=release.names["app_user"])
    with psycopg.connect(release.app_url, autocommit=True) as conn:
        _write(conn, e5, "kb", KB)
        _write(conn, e5, "other", OTHER)


def _index(release: Release) -> dict[str, Any]:
    """Everything the BM25 arm reads, as the superuser sees it."""
    with psycopg.connect(with_database(release.superuser, release.names["ragfr_db"])) as conn:
        return {
            "collections": conn.execute(
                "SELECT collection_name, n_docs, total_len FROM ragfr_collection_stats ORDER BY 1").fetchall(),
            "terms": conn.execute("SELECT collection_name, lexeme, df FROM ragfr_term_stats ORDER BY 1, 2").fetchall(),
            "docs": conn.execute("SELECT count(*) FROM ragfr_lex_docs").fetchone(),
            "postings": indexed_postings(conn),
        }


def _sound(release: Release) -> None:
    """The index is the exact recount of the chunks (tests/support/lexidx.py, independent of verify-index)."""
    with psycopg.connect(release.ragfr_url) as conn:
        assert block_problems(conn) == []
        assert indexed_postings(conn) == recounted_postings(conn)
        stats = conn.execute(
            "SELECT collection_name, count(*), sum(fts_len) FROM document_chunk GROUP BY 1 ORDER BY 1").fetchall()
        assert conn.execute("SELECT collection_name, n_docs, total_len FROM ragfr_collection_stats"
                            " ORDER BY 1").fetchall() == stats
        assert conn.execute(
            "SELECT count(*) FROM (SELECT collection_name, u.lexeme, count(*) AS df FROM document_chunk, unnest(fts) u"
            " GROUP BY 1, 2) w FULL JOIN ragfr_term_stats t USING (collection_name, lexeme)"
            " WHERE w.df IS DISTINCT FROM t.df").fetchone() == (0,)


def _superuser(release: Release) -> psycopg.Connection[Any]:
    """The superuser in the release's database (the setting, not the attacker)."""
    return psycopg.connect(with_database(release.superuser, release.names["ragfr_db"]), autocommit=True)


def _give_temp_back(release: Release) -> None:
    """A database where TEMP came back to the role (a hand-made grant): the next lock must hold on its own."""
    with _superuser(release) as conn:
        conn.execute(sql.SQL("GRANT TEMPORARY ON DATABASE {} TO {}").format(
            sql.Identifier(release.names["ragfr_db"]), sql.Identifier(release.names["app_user"])))


@pytest.mark.parametrize("function", ["ragfr_lexidx_after_truncate", "ragfr_bm25_after_truncate"])
def test_a_truncate_trigger_on_a_temporary_table_cannot_empty_the_index(release: Release, e5: Any,
                                                                        function: str) -> None:
    _loaded(release, e5)
    before = _index(release)
    attach = (f"CREATE TRIGGER wipe AFTER TRUNCATE ON pg_temp.decoy FOR EACH STATEMENT"
              f" EXECUTE FUNCTION public.{function}()")
    with psycopg.connect(release.app_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"):
            conn.execute("CREATE TEMP TABLE decoy (x int)")  # the attack as it was: no table to attach to
    _give_temp_back(release)
    with psycopg.connect(release.app_url, autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE decoy (x int)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match=f"permission denied for function (public\\.)?{function}"):
            conn.execute(attach)
        conn.execute("TRUNCATE pg_temp.decoy")
    assert _index(release) == before
    assert before["docs"] == (5,) and len(before["collections"]) == 2
    _sound(release)


@pytest.mark.parametrize("function", ["ragfr_bm25_after_insert", "ragfr_lexidx_after_insert"])
def test_an_insert_trigger_on_a_temporary_table_cannot_forge_another_collections_postings(
        release: Release, e5: Any, function: str) -> None:
    _loaded(release, e5)
    before = _index(release)
    forge = ("INSERT INTO pg_temp.decoy SELECT 'forged-' || g, 'other', to_tsvector('simple', 'résiliation prime'), 2"
             "  FROM generate_series(1, 50) g")
    with psycopg.connect(release.app_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TEMP TABLE decoy (id text, collection_name text, fts tsvector, fts_len integer)")
    _give_temp_back(release)
    with psycopg.connect(release.app_url, autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE decoy (id text, collection_name text, fts tsvector, fts_len integer)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match=f"permission denied for function (public\\.)?{function}"):
            conn.execute(f"CREATE TRIGGER forge AFTER INSERT ON pg_temp.decoy REFERENCING NEW TABLE AS new_rows"
                         f" FOR EACH STATEMENT EXECUTE FUNCTION public.{function}()")
        conn.execute(forge)
        # Nor can it call what the triggers call to write the index.
        for call in ("SELECT ragfr_lex_add('{other}', '{prim}', '{999}', '{9}', '{1}')",
                     "SELECT ragfr_bm25_apply_terms('{other}', '{prim}', '{1000}')",
                     "SELECT ragfr_bm25_apply_collections('{other}', '{1000}', '{1000}')",
                     "SELECT ragfr_lex_remove('{other}', '{prim}', '{1}')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for function"):
                conn.execute(call)
    assert _index(release) == before
    _sound(release)


@pytest.mark.parametrize("statement", [
    "UPDATE document_chunk SET fts = to_tsvector('simple', 'sinistre sinistre sinistre'), fts_len = 1 WHERE id = 'vol'",
    "UPDATE document_chunk SET fts_len = 100000 WHERE collection_name = 'other'",
    "UPDATE document_chunk SET embedding_model = 'other:model' WHERE id = 'vol'",
    "INSERT INTO document_chunk (id, collection_name, text, fts, fts_len)"
    " VALUES ('x', 'other', 'prime', to_tsvector('simple', 'prime prime'), 1)",
    "INSERT INTO document_chunk (id, collection_name, text) VALUES ('x', 'other', 'prime')"
    " ON CONFLICT (id) DO UPDATE SET fts_len = 7",
])
def test_the_role_cannot_write_the_columns_ragfr_maintains(release: Release, e5: Any, statement: str) -> None:
    """The fill trigger recomputes fts only when the text changes: a forged fts without a text change used
    to be kept, and the statistics followed it."""
    _loaded(release, e5)
    before = _index(release)
    with psycopg.connect(release.app_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for table document_chunk"):
            conn.execute(statement)
    assert _index(release) == before
    _sound(release)


def test_the_role_cannot_create_temporary_tables(release: Release, e5: Any) -> None:
    _loaded(release, e5)
    app, db = release.names["app_user"], release.names["ragfr_db"]
    with psycopg.connect(release.app_url, autocommit=True) as conn:
        for statement in ("CREATE TEMP TABLE t (x int)", "CREATE TEMPORARY TABLE t AS SELECT 1 AS x",
                          "SELECT 1 AS x INTO TEMP t"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied to create temporary"):
                conn.execute(statement)
    with _superuser(release) as conn:
        assert conn.execute("SELECT has_database_privilege(%s, %s, 'TEMP'), has_database_privilege(%s, %s, 'TEMP')",
                            (app, db, release.names["ragfr_user"], db)).fetchone() == (False, True)
        # ... and no SECURITY DEFINER function of the schema is executable but by its owner.
        assert conn.execute(
            "SELECT array_agg(proname ORDER BY proname) FROM pg_proc WHERE pronamespace = 'public'::regnamespace"
            " AND prosecdef AND (has_function_privilege(%s, oid, 'EXECUTE')"
            "  OR has_function_privilege('public', oid, 'EXECUTE'))", (app,)).fetchone() == (None,)


def test_a_temp_grant_given_back_is_taken_again_by_the_next_migrate(release: Release, e5: Any) -> None:
    _loaded(release, e5)
    app, db = release.names["app_user"], release.names["ragfr_db"]
    with _superuser(release) as conn:
        conn.execute(sql.SQL("GRANT TEMPORARY ON DATABASE {} TO PUBLIC").format(sql.Identifier(db)))
        conn.execute("GRANT EXECUTE ON FUNCTION ragfr_bm25_after_truncate() TO PUBLIC")
    migrate(release.ragfr_url, app_role=app)
    with _superuser(release) as conn:
        assert conn.execute("SELECT has_database_privilege(%s, %s, 'TEMP'),"
                            " has_function_privilege(%s, 'ragfr_bm25_after_truncate()', 'EXECUTE')",
                            (app, db, app)).fetchone() == (False, False)


def test_a_migrating_role_that_cannot_revoke_temp_is_refused_with_the_statement_to_run(release: Release) -> None:
    """On an external server the migrations' role may own the schema but not the database: it cannot take
    TEMP from PUBLIC, and `--app-role` stops (one transaction: nothing granted) naming what to run."""
    migrate(release.ragfr_url, 384, E5)
    app, db = release.names["app_user"], release.names["ragfr_db"]
    with _superuser(release) as conn:
        superuser = conn.execute("SELECT current_user").fetchone()
        assert superuser is not None
        conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(db), sql.Identifier(superuser[0])))
        conn.execute(sql.SQL("ALTER SCHEMA public OWNER TO {}").format(sql.Identifier(release.names["ragfr_user"])))
    with pytest.raises(ConfigError, match=f"--app-role {app} may create temporary tables in database {db}.*"
                                          f"does not own database {db}.*REVOKE TEMPORARY ON DATABASE"):
        migrate(release.ragfr_url, app_role=app)
    with _superuser(release) as conn:
        assert conn.execute("SELECT has_table_privilege(%s, 'document_chunk', 'DELETE')", (app,)).fetchone() == (False,)
        conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(sql.Identifier(db)))
    assert migrate(release.ragfr_url, app_role=app).app_role == app


ATTACHED_ELSEWHERE = [
    ("ragfr_lexidx_after_truncate", "AFTER TRUNCATE ON decoy FOR EACH STATEMENT", "TRUNCATE decoy"),
    ("ragfr_bm25_after_truncate", "AFTER TRUNCATE ON decoy FOR EACH STATEMENT", "TRUNCATE decoy"),
    ("ragfr_bm25_after_insert", "AFTER INSERT ON decoy REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT",
     "INSERT INTO decoy VALUES ('f1', 'other', to_tsvector('simple', 'prime'), 1)"),
    ("ragfr_lexidx_after_insert", "AFTER INSERT ON decoy REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT",
     "INSERT INTO decoy VALUES ('f1', 'other', to_tsvector('simple', 'prime'), 1)"),
    ("ragfr_bm25_after_delete", "AFTER DELETE ON decoy REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT",
     "DELETE FROM decoy"),
    ("ragfr_lexidx_after_update", "AFTER UPDATE ON decoy REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows"
     " FOR EACH STATEMENT", "UPDATE decoy SET fts_len = 2"),
    # the right table, the wrong event: insert's function fired by deletes would add the deleted rows again
    ("ragfr_bm25_after_insert", "AFTER DELETE ON document_chunk REFERENCING OLD TABLE AS new_rows FOR EACH STATEMENT",
     "DELETE FROM document_chunk WHERE id = 'o1'"),
    ("ragfr_lexidx_after_delete", "AFTER DELETE ON document_chunk REFERENCING OLD TABLE AS old_rows FOR EACH ROW",
     "DELETE FROM document_chunk WHERE id = 'o1'"),
]


@pytest.mark.parametrize(("function", "trigger", "fire"), ATTACHED_ELSEWHERE)
def test_a_trigger_function_attached_anywhere_else_raises_even_for_a_superuser(
        release: Release, e5: Any, function: str, trigger: str, fire: str) -> None:
    _loaded(release, e5)
    before = _index(release)
    with _superuser(release) as conn:
        conn.execute("CREATE TABLE decoy (id text, collection_name text, fts tsvector, fts_len integer)")
        conn.execute("INSERT INTO decoy VALUES ('f0', 'other', to_tsvector('simple', 'prime'), 1)")
        conn.execute(f"CREATE TRIGGER misuse {trigger} EXECUTE FUNCTION {function}()")
        with pytest.raises(psycopg.errors.InsufficientPrivilege,
                           match=f"ragfr: {function} fired .* it maintains the BM25 index of document_chunk only"):
            conn.execute(fire)
    assert _index(release) == before
    _sound(release)


def test_the_triggers_still_fire_for_the_roles_writes_without_execute(release: Release, e5: Any) -> None:
    """PostgreSQL checks EXECUTE on a trigger function at CREATE TRIGGER, not when the trigger fires: the role
    holds EXECUTE on none of them, and its writes still keep the index exact (checked on this server)."""
    _loaded(release, e5)
    app = release.names["app_user"]
    with _superuser(release) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT DISTINCT t.tgfoid::regprocedure::text FROM pg_trigger t WHERE t.tgrelid = 'document_chunk'::regclass"
            " AND NOT t.tgisinternal AND (t.tgtype & 1) = 0 ORDER BY 1")]
        assert len(names) == 8
        assert [n for n in names if conn.execute("SELECT has_function_privilege(%s, %s, 'EXECUTE')",
                                                 (app, n)).fetchone() != (False,)] == []
    _sound(release)
    with psycopg.connect(release.app_url, autocommit=True) as conn:
        conn.execute("SELECT set_config('ragfr.writer_model', %s, false)", (E5,))
        vector = _vec(e5.embed_passages(["Vol. Plainte sous 48 heures."])[0])
        # Open WebUI's upsert: its columns, ON CONFLICT on the id.
        conn.execute(
            "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata) VALUES (%s, %s::vector, 'kb', %s,"
            " '{}') ON CONFLICT (id) DO UPDATE SET vector = EXCLUDED.vector, text = EXCLUDED.text,"
            " vmetadata = EXCLUDED.vmetadata", ("vol", vector, "Vol. Plainte sous 48 heures."))
        _sound(release)
        conn.execute("UPDATE document_chunk SET vmetadata = '{\"v\": 2}', collection_name = 'kb2' WHERE id = 'franchise'")
        _sound(release)
        conn.execute("DELETE FROM document_chunk WHERE collection_name = 'other'")
        _sound(release)
    assert [c for c, _, _ in _index(release)["collections"]] == ["kb", "kb2"]


def test_the_embedding_switch_moves_the_roles_vector_privileges_with_the_name(release: Release, e5: Any) -> None:
    """Column privileges belong to the column: after the switch's renames (ragfr.embmigrate.swap) Open WebUI
    must still write `vector`, the new column, and no longer the old one."""
    _loaded(release, e5)
    app = release.names["app_user"]
    with psycopg.connect(release.ragfr_url, autocommit=True) as conn, conn.transaction():
        conn.execute("ALTER TABLE document_chunk ADD COLUMN vector_next vector(384)")
        conn.execute("ALTER TABLE document_chunk RENAME COLUMN vector TO vector_prev")
        conn.execute("ALTER TABLE document_chunk RENAME COLUMN vector_next TO vector")
        assert move_column_privileges(conn, "document_chunk", "vector_prev", "vector") == 2  # INSERT, UPDATE
        got = conn.execute(
            "SELECT has_column_privilege(%s, 'document_chunk', 'vector', 'INSERT, UPDATE'),"
            " has_column_privilege(%s, 'document_chunk', 'vector_prev', 'INSERT'),"
            " has_column_privilege(%s, 'document_chunk', 'vector_prev', 'UPDATE')", (app, app, app)).fetchone()
    assert got == (True, False, False)


def _verify(release: Release, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RAGFR), "verify-index", "--dsn", release.ragfr_url, *args],
                          capture_output=True, text=True, check=False, timeout=300)


def _hits(release: Release, e5: Any) -> list[list[tuple[str, int | None, float | None]]]:
    with psycopg.connect(release.app_url, autocommit=True) as conn:
        return [[(h.id, h.ranks.get("lexical"), None if h.scores.get("lexical") is None else round(h.scores.get("lexical"), 6))
                 for h in search(conn, q, collections=["kb", "other"], embedder=e5,
                                 config=SearchConfig(k=5, rerank=False)).hits]
                for q in QUERIES]


def test_verify_index_finds_damage_and_repair_restores_the_same_searches(release: Release, e5: Any) -> None:
    _loaded(release, e5)
    clean = _verify(release, "--all")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.splitlines() == ["kb: 3 chunks, clean", "other: 2 chunks, clean"]
    hits = _hits(release, e5)
    assert hits[0][0][:2] == ("declaration", 1)

    with _superuser(release) as conn:  # damage only the index could not have done by itself
        conn.execute("DELETE FROM ragfr_lex_docs WHERE chunk_id = 'franchise'")
        conn.execute("UPDATE ragfr_collection_stats SET n_docs = n_docs + 5 WHERE collection_name = 'kb'")
        conn.execute("DELETE FROM ragfr_term_stats WHERE collection_name = 'kb' AND lexeme = 'sinistr'")
        conn.execute("DELETE FROM ragfr_lex_blocks WHERE collection_name = 'kb' AND lexeme = 'plaint'")
        # and the forged write 0015's grants now refuse to the role: the statistics follow it
        conn.execute("UPDATE document_chunk SET fts = to_tsvector('simple', 'vol vol vol vol'), fts_len = 4"
                     " WHERE id = 'vol'")
    found = _verify(release, "kb")
    assert found.returncode == 1, found.stdout + found.stderr
    assert found.stdout.startswith("kb: 3 chunks, DIFFERS: stale_fts 1, collection_stats 1, term_stats "), found.stdout
    assert "docs_missing 1" in found.stdout and "postings_missing" in found.stdout
    assert _verify(release, "other").returncode == 0
    quick = _verify(release, "kb", "--no-text")  # trusts the forged fts: sees the rest
    assert quick.returncode == 1 and quick.stdout.startswith("kb: 3 chunks, DIFFERS: collection_stats 1,"), quick.stdout
    report = json.loads(_verify(release, "--all", "--json").stdout)
    assert not report["clean"] and [c["clean"] for c in report["collections"]] == [False, True]

    repaired = _verify(release, "--all", "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert repaired.stdout.startswith("kb: 3 chunks, clean (repaired; was: stale_fts 1,"), repaired.stdout
    assert "other: 2 chunks, clean\n" in repaired.stdout
    assert _verify(release, "--all").returncode == 0
    _sound(release)
    assert _hits(release, e5) == hits
    # the repaired index keeps up with the role's writes
    with psycopg.connect(release.app_url, autocommit=True) as conn:
        _write(conn, e5, "kb", {"vol2": "Vol de véhicule. La plainte est jointe à la déclaration."})
        conn.execute("DELETE FROM document_chunk WHERE id = 'declaration'")
    _sound(release)
    assert _verify(release, "--all").returncode == 0


def test_verify_index_refuses_an_unknown_collection_and_a_repair_by_the_role(release: Release, e5: Any) -> None:
    _loaded(release, e5)
    unknown = _verify(release, "nope")
    assert unknown.returncode == 2 and "unknown collection 'nope'" in unknown.stderr, unknown.stderr
    with _superuser(release) as conn:
        conn.execute("UPDATE ragfr_collection_stats SET total_len = total_len + 1 WHERE collection_name = 'other'")
    as_role = subprocess.run([str(RAGFR), "verify-index", "--dsn", release.app_url, "other", "--repair"],
                             capture_output=True, text=True, check=False, timeout=300)
    assert as_role.returncode == 2 and "run it as the schema owner" in as_role.stderr, as_role.stderr
    assert "Traceback" not in as_role.stderr
    assert _verify(release, "other", "--repair").returncode == 0
    _sound(release)
