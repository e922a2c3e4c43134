"""Building an HNSW index CONCURRENTLY, the one way every caller does it: `ragfr migrate` (the live index
in another precision, ragfr.db.vector_index_build), `ragfr filter-index sync` (a declared filter's partial
graph, ragfr.db.filter_indexes) and an embedding migration (the new space's index, ragfr.embmigrate.indexing).

CREATE INDEX CONCURRENTLY cannot run in a transaction block, so its progress cannot be committed with
anything else: the catalog is the checkpoint. An interrupted build leaves an INVALID index behind, which is
dropped (also CONCURRENTLY) before building again. The build waits for every older transaction to end, so
no lock_timeout applies to it. maintenance_work_mem is set for the build alone: HNSW builds fastest while
the graph fits in it (pgvector goes on past it, slower). A long build reports its progress from
pg_stat_progress_create_index on a second session every PROGRESS_EVERY_S, so a Job's log is not silent.
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

from ragfr.errors import DatabaseError, first_line

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 15.0


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
