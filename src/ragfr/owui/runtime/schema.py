"""Open WebUI's start-up DDL, when ragfr's migrations own the schema (patch edit `no-ddl-under-ragfr`).

Stock Open WebUI 0.12.4's pgvector client runs `CREATE INDEX IF NOT EXISTS` for its vector, 'simple'
text-search and collection indexes at every start. PostgreSQL checks ownership before IF NOT EXISTS, so
Open WebUI's least-privilege role (DML only, migration 0012) would fail there. When ragfr's schema is present
the migrations Job has made everything Open WebUI needs; the patch then CHECKS instead of creating, and
refuses to start on a schema that lacks what the stock code would have created or relied on (a migration
that did not finish), naming it. Without ragfr's schema the stock code runs unchanged.
"""

from __future__ import annotations

from typing import Any

# Imported at Open WebUI's start (its pgvector client calls the schema check): the retrieval arms come with it
# and declare their metric series at 0 (ragfr.retrieval.arms), so /metrics shows them before the first search.
import ragfr.retrieval  # noqa: F401

# Indexes the stock start-up would create that ragfr's migrations provide under the same names (0003, 0004).
# idx_document_chunk_text_search is not among them: it serves only the stock hybrid search, which the
# patch replaces with ragfr's.
REQUIRED_INDEXES = ("idx_document_chunk_vector", "idx_document_chunk_collection_name")


class SchemaNotReady(RuntimeError):
    """ragfr's schema is present but lacks an object Open WebUI relies on."""


def schema_owned_by_ragfr(session: Any) -> bool:
    """True when ragfr's migrations have run on this database (their bookkeeping table exists)."""
    from sqlalchemy import text

    return bool(session.execute(text("SELECT to_regclass('ragfr_schema_migrations') IS NOT NULL")).scalar())


def require_ragfr_schema(session: Any, index_method: str) -> None:
    """Raise SchemaNotReady unless the indexes the stock code would create exist, the vector index with the
    method Open WebUI is configured for (the stock check refuses a mismatch the same way)."""
    from sqlalchemy import text

    found = dict(session.execute(
        text("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
             " AND tablename = 'document_chunk'")
    ).all())
    missing = [name for name in REQUIRED_INDEXES if name not in found]
    if missing:
        raise SchemaNotReady(
            f"ragfr schema is present but document_chunk lacks {', '.join(missing)}: Open WebUI's role may not "
            "create indexes; run `ragfr migrate` (the chart's migrations Job) as the schema owner"
        )
    vector_def = found["idx_document_chunk_vector"].lower()
    if f" using {index_method.lower()} " not in vector_def:
        raise SchemaNotReady(
            f"idx_document_chunk_vector is not a {index_method} index ({found['idx_document_chunk_vector']}): set "
            "PGVECTOR_INDEX_METHOD to the method of ragfr's index (hnsw)"
        )
