-- ragfr 0004: the HNSW index under the name Open WebUI 0.12.4 checks (idx_document_chunk_vector), with the
-- parameters it is told to use (PGVECTOR_INDEX_METHOD=hnsw, PGVECTOR_HNSW_M=16,
-- PGVECTOR_HNSW_EF_CONSTRUCTION=64), so its startup finds a matching index and leaves it alone.
-- An adopted table may already carry an ivfflat index of that name (Open WebUI's default): replaced.
DO $migration$
DECLARE
    existing text;
BEGIN
    SELECT indexdef INTO existing FROM pg_indexes
     WHERE schemaname = current_schema() AND indexname = 'idx_document_chunk_vector';
    IF existing IS NOT NULL AND existing NOT ILIKE '%USING hnsw%vector_cosine_ops%m=''16''%ef_construction=''64''%' THEN
        DROP INDEX idx_document_chunk_vector;
        existing := NULL;
    END IF;
    IF existing IS NULL THEN
        CREATE INDEX idx_document_chunk_vector ON document_chunk
            USING hnsw (vector vector_cosine_ops) WITH (m = 16, ef_construction = 64);
    END IF;
END
$migration$;
