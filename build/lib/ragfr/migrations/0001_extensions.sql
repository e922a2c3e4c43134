-- ragfr 0001: extensions the schema needs.
-- vector: pgvector (our AVX-512-free build, images/ragdb). Creating it needs a role allowed to (superuser,
-- or the database owner where the extension is trusted); the ragdb image creates it at initdb, so in the
-- cluster this statement is a no-op.
CREATE EXTENSION IF NOT EXISTS vector;
