"""Every identifier the migration touches, in one place: the swap renames them in pairs, so a typo in one
module would silently break the symmetry the rollback relies on."""

from __future__ import annotations

TABLE = "document_chunk"
SPACE_TABLE = "ragfr_embedding_space"
STATE_TABLE = "ragfr_embedding_migration"

# The live names are the ones Open WebUI reads and checks at startup.
VECTOR = "vector"
MODEL = "embedding_model"
INDEX = "idx_document_chunk_vector"

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

# Session advisory lock held by whichever `ragfr embeddings` command changes things ("embmig" in ASCII).
# Distinct from `ragfr migrate`'s key so a schema upgrade and an embedding migration never wait on each other.
LOCK_KEY = 0x65_6D62_6D69_67

# The migration version that must be applied for this tool to run.
SCHEMA_VERSION = 100
