"""The names of the live schema objects that more than the embedding migration reads: the table, the live
vector column and its index (the vector index, retrieval), the migration's state table (the open-migration
clause) and the vector-index lock's key. The embedding migration's shadows and every pair it renames are
ragfr.embmigrate.names."""

from __future__ import annotations

TABLE = "document_chunk"
SPACE_TABLE = "ragfr_embedding_space"
STATE_TABLE = "ragfr_embedding_migration"

# The live names are the ones Open WebUI reads and checks at startup.
VECTOR = "vector"
MODEL = "embedding_model"
INDEX = "idx_document_chunk_vector"

# Session advisory lock held by whichever command changes the vector indexes (ragfr.vector_index.lock; "embmig"
# in ASCII). Distinct from `ragfr migrate`'s key so a schema upgrade and an embedding migration never wait on
# each other.
LOCK_KEY = 0x65_6D62_6D69_67
