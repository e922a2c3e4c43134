"""The HNSW index of the new space, built CONCURRENTLY so Open WebUI keeps writing meanwhile.

CREATE INDEX CONCURRENTLY cannot run inside a transaction block, so its progress cannot be committed
with a phase change. Instead the catalog is the checkpoint: a valid index is done; an INVALID one is what
an interrupted build leaves behind, and is dropped and rebuilt.
"""

from __future__ import annotations

import logging

import psycopg
from psycopg import sql

from ragfr.embmigrate import catalog, ddl
from ragfr.embmigrate.catalog import Index
from ragfr.embmigrate.faults import kill_during

log = logging.getLogger(__name__)


def ensure_index(conn: psycopg.Connection, like: Index, name: str, column: str, maintenance_work_mem: str) -> bool:
    """Make `name` a valid index on `column` shaped like `like`; return True if it had to be built.

    `conn` must be in autocommit mode with no open transaction.
    """
    existing = catalog.index(conn, name)
    if existing is not None and existing.valid:
        return False
    if existing is not None:
        log.warning("index %s is invalid (an interrupted build); dropping and rebuilding it", name)
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
    # HNSW builds fastest when the graph fits in maintenance_work_mem; past it pgvector goes on, slower.
    conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (maintenance_work_mem,))
    timer = kill_during("index-build")
    try:
        target = catalog.column(conn, column)
        dims = target.dims if target is not None else None
        conn.execute(ddl.create_index_statement(like, name, column, concurrently=True, dims=dims))
    finally:
        if timer is not None:
            timer.cancel()
        conn.execute("RESET maintenance_work_mem")
    return True
