"""`ragfr migrate`: the schema (ragfr.db.migrate), then, under the same migration lock, the vector indexes it
asks for: the live index in the precision asked for (build.ensure) and the declared filters' and large
collections' graphs (graphs.sync). The schema upgrade lives in db/ and knows nothing of the indexes' build;
this is where the two are one command.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from ragfr.db import migrate as schema
from ragfr.errors import ConfigError
from ragfr.vector_index import build, graphs
from ragfr.vector_index.precision import PRECISIONS, precision_of

log = logging.getLogger(__name__)
VECTOR_INDEX_VERSION = 11  # from this migration on, `ragfr migrate` keeps the HNSW index's precision
FILTER_INDEX_VERSION = 14  # from this one on, it builds the declared filters' indexes (ragfr.vector_index.graphs)


@dataclass
class MigrateReport(schema.MigrateReport):
    index_rebuilt: bool = False  # idx_document_chunk_vector was rebuilt in another precision
    filter_indexes: graphs.SyncReport | None = None


def migrate(
    dsn: str,
    dims: int | None = None,
    model: str | None = None,
    *,
    directory: Path | None = None,
    say: Callable[[str], None] = log.info,
    lock_wait_s: float = 600.0,
    lock_timeout_s: float = 30.0,
    app_role: str | None = None,
    vector_index: str | None = None,
    filter_index: Sequence[str] = (),
) -> MigrateReport:
    """Bring the database at `dsn` to the newest schema, then its vector indexes to what is asked (see
    ragfr.db.migrate.migrate for the schema's arguments). `vector_index`: halfvec or vector, the live
    index's precision; `filter_index`: `key=value` filters to declare, whose graphs are built."""
    if vector_index not in (None, *PRECISIONS):
        raise ConfigError(f"--vector-index must be one of {', '.join(PRECISIONS)}, got {vector_index!r}")
    declarations = [graphs.parse_declaration(text) for text in filter_index]  # refused before any change
    indexes = MigrateReport()

    def then(conn: psycopg.Connection, report: schema.MigrateReport, migrations: list[schema.Migration]) -> None:
        if any(m.version == VECTOR_INDEX_VERSION for m in migrations):
            # Not given: halfvec when 0011 applies now (its default), else the live index's precision,
            # so a plain `ragfr migrate` never undoes an operator's --vector-index vector.
            first = any(m.version == VECTOR_INDEX_VERSION and m.path.name in report.applied for m in migrations)
            want = precision_of(vector_index or "halfvec") if vector_index or first else None
            indexes.index_rebuilt = build.ensure(conn, want, say)
        if any(m.version == FILTER_INDEX_VERSION for m in migrations):
            # After the live index: a declared filter's graph must have its shape (precision) to be used.
            for key, value in declarations:
                graphs.declare(conn, key, value)
            indexes.filter_indexes = graphs.sync(conn, dsn=dsn, say=say)

    report = schema.migrate(dsn, dims, model, directory=directory, say=say, lock_wait_s=lock_wait_s,
                            lock_timeout_s=lock_timeout_s, app_role=app_role, vector_index=vector_index, then=then)
    return MigrateReport(**vars(report), index_rebuilt=indexes.index_rebuilt, filter_indexes=indexes.filter_indexes)
