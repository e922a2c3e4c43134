-- ragfr 0003: document_chunk as Open WebUI 0.12.4's pgvector client defines it, plus ragfr's columns,
-- and the one-row table naming the active embedding space.
--
-- Parameters come from the runner as session settings (ragfr migrate --dims / --embedding-model):
--   ragfr.dims             vector dimension N of the column (default 1024, bge-m3)
--   ragfr.embedding_model  embedder spec of the space (default ollama:bge-m3)
-- An existing document_chunk (Open WebUI created it first) is adopted when its dimension matches; a
-- different dimension is refused here, before anything changes: changing the model is the job of
-- `ragfr embeddings migrate` (docs/runbooks/embedding-migration.md).

CREATE TABLE ragfr_embedding_space (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    model text NOT NULL CHECK (model <> ''),
    dims integer NOT NULL CHECK (dims BETWEEN 1 AND 16000),
    updated_at timestamptz NOT NULL DEFAULT now()
);

DO $migration$
DECLARE
    want_dims integer := current_setting('ragfr.dims')::integer;
    want_model text := current_setting('ragfr.embedding_model');
    have_dims integer;
BEGIN
    IF to_regclass('document_chunk') IS NULL THEN
        EXECUTE format(
            'CREATE TABLE document_chunk (
                 id text PRIMARY KEY,
                 vector vector(%s),
                 collection_name text NOT NULL,
                 text text,
                 vmetadata jsonb)', want_dims);
    ELSE
        SELECT atttypmod INTO have_dims
          FROM pg_attribute
         WHERE attrelid = 'document_chunk'::regclass AND attname = 'vector' AND NOT attisdropped;
        IF have_dims IS DISTINCT FROM want_dims THEN
            RAISE EXCEPTION 'document_chunk.vector has % dimensions but % were requested', have_dims, want_dims
                USING HINT = 'changing the embedding model or its dimension is done with `ragfr embeddings migrate`, see docs/runbooks/embedding-migration.md';
        END IF;
    END IF;
    INSERT INTO ragfr_embedding_space (model, dims) VALUES (want_model, want_dims);
END
$migration$;

ALTER TABLE document_chunk
    ADD COLUMN embedding_model text,
    ADD COLUMN fts tsvector,
    ADD COLUMN fts_len integer;

-- Every writer, including stock Open WebUI code that knows none of these columns, gets the lexical
-- representation and the embedding provenance filled in here. The model recorded is the active space's,
-- unless the writer names one; a vector replaced without naming a model takes the active one again.
CREATE FUNCTION ragfr_document_chunk_fill() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.text IS DISTINCT FROM OLD.text THEN
        NEW.fts := ragfr_to_tsvector(NEW.text);
        NEW.fts_len := ragfr_tsvector_token_count(NEW.fts);
    END IF;
    IF NEW.vector IS NULL THEN
        NEW.embedding_model := NULL;
    ELSIF NEW.embedding_model IS NULL
          OR (TG_OP = 'UPDATE' AND NEW.vector IS DISTINCT FROM OLD.vector
              AND NEW.embedding_model IS NOT DISTINCT FROM OLD.embedding_model) THEN
        SELECT s.model INTO NEW.embedding_model FROM ragfr_embedding_space s;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER ragfr_document_chunk_fill
    BEFORE INSERT OR UPDATE ON document_chunk
    FOR EACH ROW EXECUTE FUNCTION ragfr_document_chunk_fill();

-- Adopted tables: fill the new columns for rows written before ragfr existed.
UPDATE document_chunk SET fts = ragfr_to_tsvector(text), fts_len = ragfr_tsvector_token_count(ragfr_to_tsvector(text)),
       embedding_model = CASE WHEN vector IS NULL THEN NULL ELSE current_setting('ragfr.embedding_model') END;

-- The names Open WebUI uses, so its startup finds them and creates nothing twice.
CREATE INDEX IF NOT EXISTS idx_document_chunk_collection_name ON document_chunk (collection_name);
CREATE INDEX idx_document_chunk_fts ON document_chunk USING gin (fts);
