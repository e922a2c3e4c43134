"""The HNSW index in the precision asked for, built without blocking writes: `ragfr migrate`'s last step.

`--vector-index` (chart: migrations.vectorIndex) is halfvec (default) or vector (migrations/0011 explains
the choice). A build inside a migration's transaction would block Open WebUI's uploads for minutes on a
filled table (the rule of tests/db/test_migrations.py for every index after 0008), so this step does it,
on every `ragfr migrate`, idempotently (on a fresh, empty table it takes an instant):
  1. CREATE INDEX CONCURRENTLY idx_document_chunk_vector_build (reads and writes go on; an invalid
     leftover of an interrupted run is dropped first);
  2. one short transaction, under a bounded lock wait with retries (ragfr.db.ddl.in_locked_transaction):
     DROP the old idx_document_chunk_vector, RENAME the new one to that name, which Open WebUI checks.
Running `ragfr migrate --vector-index vector` later goes back the same way; without --vector-index, once
0011 is applied, the live index's precision is kept. The chart always passes migrations.vectorIndex.
Skipped while an embedding migration is open: it copies the live index's shape and swaps index names itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import psycopg
from psycopg import sql

from ragfr.db import catalog, ddl, hnsw_build, index_lock, names, vector_index
from ragfr.db.vector_index import Precision

log = logging.getLogger(__name__)
BUILD = "idx_document_chunk_vector_build"
_OPTIONS = "m = 16, ef_construction = 64"  # 0004's, which Open WebUI is told to expect


def ensure(conn: psycopg.Connection, want: Precision | None, say: Callable[[str], None] = log.info) -> bool:
    """Make idx_document_chunk_vector store `want`; True if it was rebuilt. `conn`: autocommit.
    `want` None: keep the live index's precision (halfvec if there is none)."""
    live = catalog.index(conn, names.INDEX)
    if want is None:
        want = live.precision if live is not None and live.valid else "halfvec"
    if live is not None and live.valid and live.precision == want:
        return False
    opened = catalog.open_migration_id(conn)
    if opened is not None:
        say(f"{names.INDEX} is not {want}: left as it is while embedding migration #{opened} is open; "
            "run `ragfr migrate` again after it is finalized or rolled back")
        return False
    column = catalog.column(conn, names.VECTOR)
    if column is None or column.dims <= 0:
        return False
    rows = conn.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = 'document_chunk'::regclass").fetchone()
    say(f"building {names.INDEX} at {want} precision concurrently (about {max(int(rows[0]) if rows else 0, 0)} rows; "
        "searches and writes go on meanwhile)")
    # Held for the build: an embedding migration started meanwhile would copy an index that is being replaced.
    with index_lock.index_lock(conn, "ragfr migrate"):
        statement = sql.SQL("CREATE INDEX CONCURRENTLY {} ON {} USING hnsw ({}) WITH ({})").format(
            sql.Identifier(BUILD), sql.Identifier(names.TABLE),
            vector_index.index_expression(names.VECTOR, want, column.dims), sql.SQL(_OPTIONS))
        # The grants are given before this step: the build may wait for old transactions as long as it must.
        hnsw_build.build_concurrently(
            conn, BUILD, statement, maintenance_work_mem=None, say=say,
            failure_hint=f"{names.INDEX} is unchanged and keeps serving; an invalid {BUILD} may be left, which "
                         "the next `ragfr migrate` drops before building again")

        def swap(c: psycopg.Connection) -> None:
            c.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(names.INDEX)))
            c.execute(sql.SQL("ALTER INDEX {} RENAME TO {}").format(sql.Identifier(BUILD),
                                                                    sql.Identifier(names.INDEX)))

        ddl.in_locked_transaction(conn, f"swapping in the {want} {names.INDEX}", swap)
    say(f"{names.INDEX} now stores {want} vectors")
    return True
