-- ragfr 0001: extensions the schema needs.
-- vector: pgvector (our AVX-512-free build, images/ragdb). unaccent: accent folding in the French
-- text search configuration (see 0002). Creating them needs a role allowed to (superuser, or the
-- database owner for trusted extensions); the ragdb image creates both at initdb, so in the cluster
-- these statements are no-ops.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS unaccent;
