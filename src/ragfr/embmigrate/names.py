"""Every identifier the migration touches, in one place: the swap renames them in pairs, so a typo in one
module would silently break the symmetry the rollback relies on. The live names are ragfr.db.names' (the
vector index and retrieval read them too) and are named here again so that each pair reads side by side."""

from __future__ import annotations

from ragfr.db.names import INDEX, LOCK_KEY, MODEL, SPACE_TABLE, STATE_TABLE, TABLE, VECTOR

__all__ = [
    "FUNCTION_NEXT", "FUNCTION_PREV", "INDEX", "INDEX_NEXT", "INDEX_PREV", "LOCK_KEY", "MODEL", "MODEL_NEXT",
    "MODEL_PREV", "SCHEMA_VERSION", "SPACE_TABLE", "STATE_TABLE", "TABLE", "TRIGGER_NEXT", "TRIGGER_PREV", "VECTOR",
    "VECTOR_NEXT", "VECTOR_PREV",
]

# Shadow of the target space, before the switch.
VECTOR_NEXT = "vector_next"
MODEL_NEXT = "embedding_model_next"
INDEX_NEXT = "idx_document_chunk_vector_next"
TRIGGER_NEXT = "ragfr_embmig_guard_next"
FUNCTION_NEXT = "ragfr_embmig_invalidate_next"

# The old space after the switch, kept until finalize so that rollback is exact.
VECTOR_PREV = "vector_prev"
MODEL_PREV = "embedding_model_prev"
INDEX_PREV = "idx_document_chunk_vector_prev"
TRIGGER_PREV = "ragfr_embmig_guard_prev"
FUNCTION_PREV = "ragfr_embmig_invalidate_prev"

# The migration version that must be applied for this tool to run.
SCHEMA_VERSION = 100
