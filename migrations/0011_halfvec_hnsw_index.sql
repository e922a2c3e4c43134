-- ragfr 0011: the HNSW index stores half-precision vectors; the column stays vector(N).
--
-- idx_document_chunk_vector becomes an index on the expression (vector::halfvec(N)) with halfvec_cosine_ops:
-- half the bytes per graph node (0.82 GB -> about 0.45 GB at 100k chunks of 1024 dims), so more of the graph
-- stays in memory. Open WebUI 0.12.4 still reads and writes `vector vector(N)`; its startup only checks that
-- an index of this name exists and uses hnsw (PgvectorClient._ensure_vector_index), which stays true.
-- ragfr's vector arm asks through the same expression (ragfr.retrieval.vector_index) and re-scores the
-- candidates with the full-precision vectors, so every score it reports is float32 cosine as before.
-- Recall and sizes measured: docs/benchmarks.md ("Half-precision HNSW index").
--
-- Parameter (session setting, from `ragfr migrate --vector-index`): ragfr.vector_index
--   halfvec (default)  the expression index above
--   vector             keep the full-precision index of 0004 (vector vector_cosine_ops)
-- Either way the index keeps its name and 0004's parameters (m=16, ef_construction=64).
--
-- On an existing table the new index is built first under another name, and only then swapped in
-- (DROP + RENAME, a brief ACCESS EXCLUSIVE lock at the end): searches keep running on the old index during
-- the build; writes to document_chunk wait for it (minutes at 100k chunks; set maintenance_work_mem so the
-- graph fits, see docs/install.md). On a fresh database the table is empty and this is instant.
DO $migration$
DECLARE
    want text := coalesce(nullif(current_setting('ragfr.vector_index', true), ''), 'halfvec');
    dims integer;
    existing text;
    wanted_shape text;
BEGIN
    IF want NOT IN ('halfvec', 'vector') THEN
        RAISE EXCEPTION 'ragfr.vector_index is %, expected halfvec or vector', want;
    END IF;
    SELECT atttypmod INTO dims FROM pg_attribute
     WHERE attrelid = 'document_chunk'::regclass AND attname = 'vector' AND NOT attisdropped;
    IF want = 'halfvec' THEN
        wanted_shape := format('%%USING hnsw (((vector)::halfvec(%s)) halfvec_cosine_ops)%%', dims);
    ELSE
        wanted_shape := '%USING hnsw (vector vector_cosine_ops)%';
    END IF;
    wanted_shape := wanted_shape || 'm=''16''%ef_construction=''64''%';
    SELECT indexdef INTO existing FROM pg_indexes
     WHERE schemaname = current_schema() AND indexname = 'idx_document_chunk_vector';
    IF existing IS NOT NULL AND existing ILIKE wanted_shape THEN
        RETURN;
    END IF;
    DROP INDEX IF EXISTS idx_document_chunk_vector_build;
    IF want = 'halfvec' THEN
        EXECUTE format('CREATE INDEX idx_document_chunk_vector_build ON document_chunk'
                       ' USING hnsw ((vector::halfvec(%s)) halfvec_cosine_ops) WITH (m = 16, ef_construction = 64)',
                       dims);
    ELSE
        CREATE INDEX idx_document_chunk_vector_build ON document_chunk
            USING hnsw (vector vector_cosine_ops) WITH (m = 16, ef_construction = 64);
    END IF;
    DROP INDEX IF EXISTS idx_document_chunk_vector;
    ALTER INDEX idx_document_chunk_vector_build RENAME TO idx_document_chunk_vector;
END
$migration$;
