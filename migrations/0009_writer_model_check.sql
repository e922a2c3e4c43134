-- ragfr 0009: a vector is checked against the model that made it, when it is written.
--
-- Until now the fill trigger (0003) labelled every vector whose writer named no model with the ACTIVE
-- space's model, and trusted any label a writer gave. After `ragfr embeddings migrate` switched to another
-- model of the same width, an Open WebUI pod still configured with the old model kept writing old-model
-- vectors that were labelled with the new model: wrong forever, and invisible to every check (searches
-- compare the label, the migration never revisits a labelled row). Likewise an ingest that read the space,
-- then embedded for minutes across a switch, stored rows under the old label that no arm would ever return.
--
-- Now the writer's stated model must BE the active space's model, or the row is refused with one line
-- naming both. A writer states its model either as the row's embedding_model (ragfr ingest) or as the
-- session setting ragfr.writer_model (Open WebUI: the chart and `make up` put
-- `options=-c ragfr.writer_model=<model>` in its database URL). A writer that states nothing is accepted
-- only if the space has not changed since its transaction began: that protects writers that embed inside
-- their transaction; writers that embed before it must state their model, which ours do.
-- ragfr_embedding_space.updated_at is written with clock_timestamp() by the switch, i.e. at its very end.
--
-- Writes that leave the vector and its label alone (text or metadata edits, the migration's shadow columns,
-- the switch's renames) are not checked: their vector was checked when it was written.

CREATE OR REPLACE FUNCTION ragfr_document_chunk_fill() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    space_model text;
    space_changed timestamptz;
    stated text;
BEGIN
    IF TG_OP = 'INSERT' OR NEW.text IS DISTINCT FROM OLD.text THEN
        NEW.fts := ragfr_to_tsvector(NEW.text);
        NEW.fts_len := ragfr_tsvector_token_count(NEW.fts);
    END IF;
    IF NEW.vector IS NULL THEN
        NEW.embedding_model := NULL;
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.vector IS NOT DISTINCT FROM OLD.vector
       AND NEW.embedding_model IS NOT DISTINCT FROM OLD.embedding_model THEN
        RETURN NEW;
    END IF;
    SELECT s.model, s.updated_at INTO space_model, space_changed FROM ragfr_embedding_space s;
    IF TG_OP = 'INSERT' OR NEW.embedding_model IS DISTINCT FROM OLD.embedding_model THEN
        stated := nullif(NEW.embedding_model, '');
    END IF;
    stated := coalesce(stated, nullif(current_setting('ragfr.writer_model', true), ''));
    IF stated IS NULL THEN
        IF space_changed > transaction_timestamp() THEN
            RAISE EXCEPTION 'ragfr: vector refused: the embedding space changed to % while this transaction ran, and the writer did not name its model', space_model
                USING ERRCODE = 'check_violation',
                      HINT = 're-embed with ' || space_model || ' and write again, naming the model (ragfr.writer_model)';
        END IF;
    ELSIF stated IS DISTINCT FROM space_model THEN
        RAISE EXCEPTION 'ragfr: vector from model % refused: the active embedding space is %', stated, space_model
            USING ERRCODE = 'check_violation',
                  HINT = 'the writer is configured with an old model: set it to ' || space_model
                         || ' (Open WebUI: RAG_EMBEDDING_MODEL, see docs/runbooks/embedding-migration.md)';
    END IF;
    NEW.embedding_model := space_model;
    RETURN NEW;
END
$$;
