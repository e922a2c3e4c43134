-- ragfr 0011: the HNSW index stores half-precision vectors; the column stays vector(N).
--
-- idx_document_chunk_vector becomes an index on the expression (vector::halfvec(N)) with halfvec_cosine_ops:
-- about a third of the bytes at 1024 dims (0.82 GB -> 0.27 GB at 100k chunks), so more of the graph stays
-- in memory. Open WebUI 0.12.4 still reads and writes `vector vector(N)`; its startup only checks that an
-- index of this name exists and uses hnsw (PgvectorClient._ensure_vector_index), which stays true.
-- ragfr's vector arm asks through the same expression (ragfr.retrieval.vector_index) and re-scores the
-- candidates with the full-precision vectors, so every score it reports is float32 cosine as before.
-- Recall, sizes and build times: docs/benchmarks.md ("Half-precision HNSW index").
--
-- Parameter (session setting, from `ragfr migrate --vector-index`, chart migrations.vectorIndex):
--   ragfr.vector_index = halfvec (default) | vector (keep 0004's full-precision index)
-- Either way the index keeps its name and 0004's parameters (m=16, ef_construction=64).
--
-- The index itself is built by `ragfr migrate` right after the migrations (ragfr.db.vector_index_build):
-- CREATE INDEX CONCURRENTLY beside the old index, then a swap under a short lock. A build inside this
-- transaction would block Open WebUI's writes for minutes on a filled table (the rule for every index
-- after 0008, tests/db/test_migrations.py), and a single no-transaction statement cannot name N.
-- This file checks the parameter, so a bad value stops `ragfr migrate` before anything changes.
DO $migration$
BEGIN
    IF coalesce(nullif(current_setting('ragfr.vector_index', true), ''), 'halfvec') NOT IN ('halfvec', 'vector') THEN
        RAISE EXCEPTION 'ragfr.vector_index is %, expected halfvec or vector', current_setting('ragfr.vector_index');
    END IF;
END
$migration$;
