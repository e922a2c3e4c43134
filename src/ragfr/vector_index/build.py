"""Building an HNSW index CONCURRENTLY, the one way every caller does it: `ragfr migrate` (the live index
in another precision, `ensure` below), `ragfr filter-index sync` (a declared filter's partial graph,
ragfr.vector_index.graphs) and an embedding migration (the new space's index, ragfr.embmigrate.indexing).

CREATE INDEX CONCURRENTLY cannot run in a transaction block, so its progress cannot be committed with
anything else: the catalog is the checkpoint. An interrupted build leaves an INVALID index behind, which is
dropped (also CONCURRENTLY) before building again. The build waits for every older transaction to end, so
no lock_timeout applies to it. maintenance_work_mem is set for the build alone: HNSW builds fastest while
the graph fits in it (pgvector goes on past it, slower). A long build reports its progress from
pg_stat_progress_create_index on a second session every PROGRESS_EVERY_S, so a Job's log is not silent.

`ensure`: the live HNSW index in the precision asked for, built without blocking writes (`ragfr migrate`'s
last step, ragfr.vector_index.upgrade).

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
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import psycopg
from psycopg import sql

from ragfr.db import ddl, names, phases
from ragfr.errors import DatabaseError, first_line
from ragfr.vector_index import lock, precision, shape
from ragfr.vector_index.precision import Precision

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 15.0
BUILD = "idx_document_chunk_vector_build"
_OPTIONS = "m = 16, ef_construction = 64"  # 0004's, which Open WebUI is told to expect


def build_concurrently(
    conn: psycopg.Connection[Any], name: str, statement: sql.Composed, *, maintenance_work_mem: str | None,
    failure_hint: str, progress_dsn: str | None = None, say: Callable[[str], None] = log.info,
    during: AbstractContextManager[object] | None = None,
) -> None:
    """Drop `name` if it exists (an interrupted build's leftover), then run `statement`, a CREATE INDEX
    CONCURRENTLY of `name`. `conn`: autocommit, no open transaction. A failure raises DatabaseError with the
    server's first line and `failure_hint` (what is left and how to go on). `during`: entered around the
    build itself (the fault injection of the kill -9 tests)."""
    row = conn.execute("SELECT current_setting('lock_timeout')").fetchone()
    lock_timeout = str(row[0]) if row else "0"
    conn.execute("SET lock_timeout = 0")
    conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
    if maintenance_work_mem:
        conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (maintenance_work_mem,))
    watcher = _Watch(progress_dsn, conn.info.backend_pid, name, say) if progress_dsn else None
    try:
        with during or nullcontext():
            conn.execute(statement)
    except psycopg.Error as exc:
        if conn.broken:
            raise  # the connection is gone: the CLI's "lost the database connection; re-run" applies
        raise DatabaseError(f"building {name} failed: {first_line(exc)}. {failure_hint}") from exc
    finally:
        if watcher is not None:
            watcher.stop()
        if not conn.closed:
            if maintenance_work_mem:
                conn.execute("RESET maintenance_work_mem")
            conn.execute("SELECT set_config('lock_timeout', %s, false)", (lock_timeout,))


def ensure(conn: psycopg.Connection, want: Precision | None, say: Callable[[str], None] = log.info) -> bool:
    """Make idx_document_chunk_vector store `want`; True if it was rebuilt. `conn`: autocommit.
    `want` None: keep the live index's precision (halfvec if there is none)."""
    live = shape.index(conn, names.INDEX)
    if want is None:
        want = live.precision if live is not None and live.valid else "halfvec"
    if live is not None and live.valid and live.precision == want:
        return False
    opened = phases.open_migration_id(conn)
    if opened is not None:
        say(f"{names.INDEX} is not {want}: left as it is while embedding migration #{opened} is open; "
            "run `ragfr migrate` again after it is finalized or rolled back")
        return False
    column = shape.column(conn, names.VECTOR)
    if column is None or column.dims <= 0:
        return False
    rows = conn.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = 'document_chunk'::regclass").fetchone()
    say(f"building {names.INDEX} at {want} precision concurrently (about {max(int(rows[0]) if rows else 0, 0)} rows; "
        "searches and writes go on meanwhile)")
    # Held for the build: an embedding migration started meanwhile would copy an index that is being replaced.
    with lock.index_lock(conn, "ragfr migrate"):
        statement = sql.SQL("CREATE INDEX CONCURRENTLY {} ON {} USING hnsw ({}) WITH ({})").format(
            sql.Identifier(BUILD), sql.Identifier(names.TABLE),
            precision.index_expression(names.VECTOR, want, column.dims), sql.SQL(_OPTIONS))
        # The grants are given before this step: the build may wait for old transactions as long as it must.
        build_concurrently(
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


class _Watch:
    """Reports a build's progress from pg_stat_progress_create_index, on its own session."""

    def __init__(self, dsn: str, pid: int, name: str, say: Callable[[str], None]) -> None:
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(dsn, pid, name, say), daemon=True)
        self._thread.start()

    def _run(self, dsn: str, pid: int, name: str, say: Callable[[str], None]) -> None:
        try:
            started = time.monotonic()
            with psycopg.connect(dsn, autocommit=True) as conn:
                while not self._done.wait(PROGRESS_EVERY_S):
                    row = conn.execute("SELECT phase, tuples_done, tuples_total FROM pg_stat_progress_create_index"
                                       " WHERE pid = %s", (pid,)).fetchone()
                    if row is not None:
                        done, total = int(row[1] or 0), int(row[2] or 0)
                        # pgvector's HNSW build reports the rows it has loaded, without a total
                        counts = f", {done} of {total} rows" if total else (f", {done} rows" if done else "")
                        say(f"{name}: {row[0]}{counts} ({time.monotonic() - started:.0f} s)")
        except psycopg.Error as exc:  # progress is a courtesy: the build itself goes on
            log.debug("progress of %s unavailable: %s", name, exc)

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=5)
