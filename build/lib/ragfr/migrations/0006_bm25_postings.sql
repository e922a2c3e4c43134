-- ragfr 0006: a postings table for the BM25 arm.
--
-- Measured (docs/benchmarks.md): at 100k chunks a French question matches ~6k chunks on ANY term, and
-- scoring them from their tsvectors (unnest of every candidate's whole vector) cost ~150 ms p50. With one
-- row per (collection, lexeme, chunk) holding the term frequency and the chunk's length, BM25 reads only
-- the postings of the query's lexemes. Kept exact by statement triggers of their own (next to those of
-- 0005, which they leave alone), whoever writes; rows whose id, collection and analysed text did not
-- change (an embedding-migration backfill, a metadata update) cost nothing.

CREATE TABLE ragfr_postings (
    collection_name text NOT NULL,
    lexeme text NOT NULL,
    chunk_id text NOT NULL,
    tf integer NOT NULL,
    fts_len integer NOT NULL,
    PRIMARY KEY (collection_name, lexeme, chunk_id) INCLUDE (tf, fts_len)
);

CREATE FUNCTION ragfr_postings_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ragfr_postings (collection_name, lexeme, chunk_id, tf, fts_len)
    SELECT r.collection_name, u.lexeme, r.id, cardinality(u.positions), coalesce(r.fts_len, 0)
      FROM new_rows r, unnest(r.fts) u;
    RETURN NULL;
END $$;

CREATE FUNCTION ragfr_postings_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM ragfr_postings p
     USING (SELECT o.* FROM old_rows o
             WHERE NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.id = o.id AND n.collection_name = o.collection_name
                                AND n.fts IS NOT DISTINCT FROM o.fts)) o,
           unnest(o.fts) u
     WHERE p.collection_name = o.collection_name AND p.lexeme = u.lexeme AND p.chunk_id = o.id;
    INSERT INTO ragfr_postings (collection_name, lexeme, chunk_id, tf, fts_len)
    SELECT r.collection_name, u.lexeme, r.id, cardinality(u.positions), coalesce(r.fts_len, 0)
      FROM (SELECT n.* FROM new_rows n
             WHERE NOT EXISTS (SELECT 1 FROM old_rows o WHERE n.id = o.id AND n.collection_name = o.collection_name
                                AND n.fts IS NOT DISTINCT FROM o.fts)) r,
           unnest(r.fts) u;
    RETURN NULL;
END $$;

CREATE FUNCTION ragfr_postings_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM ragfr_postings p USING old_rows o, unnest(o.fts) u
     WHERE p.collection_name = o.collection_name AND p.lexeme = u.lexeme AND p.chunk_id = o.id;
    RETURN NULL;
END $$;

CREATE FUNCTION ragfr_postings_after_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE ragfr_postings;
    RETURN NULL;
END $$;

CREATE TRIGGER ragfr_postings_insert AFTER INSERT ON document_chunk
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ragfr_postings_after_insert();
CREATE TRIGGER ragfr_postings_update AFTER UPDATE ON document_chunk
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ragfr_postings_after_update();
CREATE TRIGGER ragfr_postings_delete AFTER DELETE ON document_chunk
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ragfr_postings_after_delete();
CREATE TRIGGER ragfr_postings_truncate AFTER TRUNCATE ON document_chunk
    FOR EACH STATEMENT EXECUTE FUNCTION ragfr_postings_after_truncate();

-- Rows that existed before this migration.
INSERT INTO ragfr_postings (collection_name, lexeme, chunk_id, tf, fts_len)
SELECT r.collection_name, u.lexeme, r.id, cardinality(u.positions), coalesce(r.fts_len, 0)
  FROM document_chunk r, unnest(r.fts) u;
