-- ragfr 0100: state of embedding-model migrations (`ragfr embeddings`, docs/runbooks/embedding-migration.md).
--
-- Only what does not depend on the target model lives here. The shadow column (vector_next vector(M)), its
-- HNSW index and the trigger that keeps it honest depend on M, so `ragfr embeddings migrate` creates them
-- at run time, each inside the transaction that records the phase it begins (CREATE INDEX CONCURRENTLY
-- excepted: it cannot run in a transaction, so the tool checks the index's validity instead).

CREATE TABLE ragfr_embedding_migration (
    id bigserial PRIMARY KEY,
    from_model text NOT NULL,
    from_dims integer NOT NULL CHECK (from_dims > 0),
    to_model text NOT NULL,
    to_dims integer NOT NULL CHECK (to_dims > 0),
    phase text NOT NULL CHECK (phase IN ('backfill', 'index', 'verify', 'ready', 'switched',
                                         'rolled_back', 'finalized')),
    -- Rows written into the shadow column, incremented in the very transaction that writes them: after
    -- any crash it equals the number of vectors that exist, so nothing is counted (or written) twice.
    rows_embedded bigint NOT NULL DEFAULT 0 CHECK (rows_embedded >= 0),
    -- Same for the old space after the switch (rows Open WebUI wrote in the new space only), which
    -- a rollback re-embeds with the old model.
    rows_reembedded_old bigint NOT NULL DEFAULT 0 CHECK (rows_reembedded_old >= 0),
    batches bigint NOT NULL DEFAULT 0,
    recall_at_10 double precision,
    recall_sample integer,
    verified_at timestamptz,
    started_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    switched_at timestamptz,
    finished_at timestamptz
);

-- At most one migration is open at a time; finished ones stay as history.
CREATE UNIQUE INDEX ragfr_embedding_migration_one_open ON ragfr_embedding_migration ((true))
    WHERE phase NOT IN ('rolled_back', 'finalized');

-- A row whose text changes (or a new row) no longer has a valid vector in the other space: clearing it
-- makes the catch-up pass re-embed it. Before the switch the other space is vector_next, after it
-- vector_prev; the trigger on document_chunk is created and dropped by the tool with the column it guards.
CREATE FUNCTION ragfr_embmig_invalidate_next() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.text IS DISTINCT FROM OLD.text THEN
        NEW.vector_next := NULL;
        NEW.embedding_model_next := NULL;
    END IF;
    RETURN NEW;
END
$$;

CREATE FUNCTION ragfr_embmig_invalidate_prev() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.text IS DISTINCT FROM OLD.text THEN
        NEW.vector_prev := NULL;
        NEW.embedding_model_prev := NULL;
    END IF;
    RETURN NEW;
END
$$;
