"""The HNSW index of the new space, built CONCURRENTLY so Open WebUI keeps writing meanwhile.

CREATE INDEX CONCURRENTLY cannot run inside a transaction block, so its progress cannot be committed
with a phase change. Instead the catalog is the checkpoint: a valid index is done; an INVALID one is what
an interrupted build leaves behind, and is dropped and rebuilt.
"""

from __future__ import annotations

import logging

import psycopg

from ragfr.embmigrate.faults import kill_during
from ragfr.vector_index import build, shape
from ragfr.vector_index.shape import Index

log = logging.getLogger(__name__)


def ensure_index(conn: psycopg.Connection, like: Index, name: str, column: str, maintenance_work_mem: str) -> bool:
    """Make `name` a valid index on `column` shaped like `like`; return True if it had to be built.

    `conn` must be in autocommit mode with no open transaction.
    """
    existing = shape.index(conn, name)
    if existing is not None and existing.valid:
        return False
    if existing is not None:
        log.warning("index %s is invalid (an interrupted build); dropping and rebuilding it", name)
    target = shape.column(conn, column)
    dims = target.dims if target is not None else None
    build.build_concurrently(
        conn, name, shape.create_index_statement(like, name, column, concurrently=True, dims=dims),
        maintenance_work_mem=maintenance_work_mem, during=_KillDuring(),
        failure_hint="the live index keeps serving; run the same command again: it drops what is left and "
                     "builds it again")
    return True


class _KillDuring:
    """The `index-build` fault point of the kill -9 tests (ragfr.embmigrate.faults), around the build."""

    def __enter__(self) -> None:
        self._timer = kill_during("index-build")

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
