"""`ragfr migrate` never waits without limit: for another runner (advisory lock) or for a table lock held
by a long transaction; both end with one line naming the session in the way, and nothing half-applied."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest
from tests.conftest import MigratedDb

from ragfr.db.migrate import LOCK_KEY, applied_versions, migrations_dir
from ragfr.errors import DatabaseError
from ragfr.vector_index.upgrade import migrate


def test_another_runner_holding_the_lock_is_named_after_the_wait(migrated_db: MigratedDb) -> None:
    dsn = migrated_db()
    with psycopg.connect(dsn, autocommit=True, application_name="other-migrator") as other:
        other.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        pid = other.info.backend_pid
        said: list[str] = []
        with pytest.raises(DatabaseError) as err:
            migrate(dsn, say=said.append, lock_wait_s=1)
    assert f"server pid {pid} (application other-migrator" in str(err.value)
    assert "kept the migration lock for more than 1 s" in str(err.value)
    assert said and f"server pid {pid}" in said[0]


def test_a_migration_waiting_behind_a_long_transaction_is_rolled_back_naming_it(
    migrated_db: MigratedDb, tmp_path: Path
) -> None:
    dsn = migrated_db()
    directory = tmp_path / "migrations"
    shutil.copytree(migrations_dir(), directory)
    (directory / "0900_add_column.sql").write_text(
        "ALTER TABLE document_chunk ADD COLUMN ragfr_test_extra integer;\n", encoding="utf-8")
    with psycopg.connect(dsn, application_name="long-report") as reader:
        reader.execute("SELECT count(*) FROM document_chunk").fetchone()  # ACCESS SHARE, transaction left open
        with pytest.raises(DatabaseError) as err:
            migrate(dsn, directory=directory, lock_timeout_s=0.5)
        pid = reader.info.backend_pid
    message = str(err.value)
    assert message.startswith("migration 0900_add_column.sql waited more than 0.5 s for a table lock")
    assert f"server pid {pid} (application long-report" in message and "pg_terminate_backend" in message
    assert 900 not in (applied_versions(dsn) or set())
    with psycopg.connect(dsn) as conn:
        columns = {r[0] for r in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'document_chunk'::regclass AND attnum > 0")}
    assert "ragfr_test_extra" not in columns
    migrate(dsn, directory=directory, lock_timeout_s=0.5)  # once the reader is gone, it applies
    assert 900 in (applied_versions(dsn) or set())


def test_the_blocker_named_is_in_this_database_not_a_clone_with_the_same_table_oid(migrated_db: MigratedDb) -> None:
    # Two databases cloned from one template: their document_chunk has the same OID. A reader of the OTHER one
    # holds no lock on ours, and must be neither named nor offered to pg_terminate_backend (found when two test
    # lanes share the cluster: another test's reader was named as this one's blocker).
    from ragfr.db import ddl
    from ragfr.db.locks import relation_holders

    ours, theirs = migrated_db(), migrated_db()
    with psycopg.connect(theirs, application_name="other-database-reader") as other, \
            psycopg.connect(ours, application_name="our-reader") as reader, psycopg.connect(ours) as conn:
        other.execute("SELECT count(*) FROM document_chunk")  # ACCESS SHARE in its database, transaction open
        reader.execute("SELECT count(*) FROM document_chunk")
        same_oid = [c.execute("SELECT 'document_chunk'::regclass::oid").fetchone() for c in (other, reader)]
        assert same_oid[0] == same_oid[1]  # the premise: clones share the OID
        named = relation_holders(conn, "document_chunk")
        hint = ddl._terminate_hint(conn)
        assert f"server pid {reader.info.backend_pid} (application our-reader" in named, named
        assert "other-database-reader" not in named and str(other.info.backend_pid) not in named, named
        assert hint.endswith(f"pg_terminate_backend({reader.info.backend_pid})"), hint
