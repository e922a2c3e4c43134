-- ragfr 0006: a postings table for the BM25 arm.
--
-- Measured (docs/benchmarks.md): at 100k chunks a French question matches ~6k chunks on ANY term, and
-- scoring them from their tsvectors (unnest of every candidate's whole vector) cost ~150 ms p50. With one
-- row per (collection, lexeme, chunk) holding the term frequency and the chunk's length, BM25 reads only
-- the postings of the query's lexemes. Kept exact by the same statement triggers as the statistics (0005),
-- whoever writes; rows whose text, collection and id did not change (an embedding-migration backfill, a
-- metadata update) cost nothing.

CREATE TABLE ragfr_postings (
    collection_name text NOT NULL,
    lexeme text NOT NULL,
    chunk_id text NOT NULL,
    tf integer NOT NULL,
    fts_len integer NOT NULL,
    PRIMARY KEY (collection_name, lexeme, chunk_id) INCLUDE (tf, fts_len)
);

CREATE OR REPLACE FUNCTION ragfr_bm25_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ragfr_bm25_apply_terms(array_agg(c), array_agg(l), array_agg(d))
       FROM (SELECT r.collection_name AS c, u.lexeme AS l, count(*) AS d
               FROM new_rows r, unnest(r.fts) u GROUP BY 1, 2) x;
    PERFORM ragfr_bm25_apply_collections(array_agg(c), array_agg(n), array_agg(l))
       FROM (SELECT collection_name AS c, count(*) AS n, sum(coalesce(fts_len, 0))::bigint AS l
               FROM new_rows GROUP BY 1) x;
    INSERT INTO ragfr_postings (collection_name, lexeme, chunk_id, tf, fts_len)
    SELECT r.collection_name, u.lexeme, r.id, cardinality(u.positions), coalesce(r.fts_len, 0)
      FROM new_rows r, unnest(r.fts) u;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION ragfr_bm25_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ragfr_bm25_apply_terms(array_agg(c), array_agg(l), array_agg(d))
       FROM (SELECT c, l, sum(s)::bigint AS d
               FROM (SELECT r.collection_name AS c, u.lexeme AS l, 1 AS s FROM new_rows r, unnest(r.fts) u
                     UNION ALL
                     SELECT r.collection_name, u.lexeme, -1 FROM old_rows r, unnest(r.fts) u) y
              GROUP BY 1, 2) x;
    PERFORM ragfr_bm25_apply_collections(array_agg(c), array_agg(n), array_agg(l))
       FROM (SELECT c, sum(n)::bigint AS n, sum(l)::bigint AS l
               FROM (SELECT collection_name AS c, 1 AS n, coalesce(fts_len, 0) AS l FROM new_rows
                     UNION ALL
                     SELECT collection_name, -1, -coalesce(fts_len, 0) FROM old_rows) y
              GROUP BY 1) x;
    -- Postings change only for rows whose id, collection or analysed text changed.
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

CREATE OR REPLACE FUNCTION ragfr_bm25_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ragfr_bm25_apply_terms(array_agg(c), array_agg(l), array_agg(-d))
       FROM (SELECT r.collection_name AS c, u.lexeme AS l, count(*) AS d
               FROM old_rows r, unnest(r.fts) u GROUP BY 1, 2) x;
    PERFORM ragfr_bm25_apply_collections(array_agg(c), array_agg(-n), array_agg(-l))
       FROM (SELECT collection_name AS c, count(*) AS n, sum(coalesce(fts_len, 0))::bigint AS l
               FROM old_rows GROUP BY 1) x;
    DELETE FROM ragfr_postings p USING old_rows o, unnest(o.fts) u
     WHERE p.collection_name = o.collection_name AND p.lexeme = u.lexeme AND p.chunk_id = o.id;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION ragfr_bm25_after_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM ragfr_term_stats;
    DELETE FROM ragfr_collection_stats;
    TRUNCATE ragfr_postings;
    RETURN NULL;
END $$;

-- Rows that existed before this migration.
INSERT INTO ragfr_postings (collection_name, lexeme, chunk_id, tf, fts_len)
SELECT r.collection_name, u.lexeme, r.id, cardinality(u.positions), coalesce(r.fts_len, 0)
  FROM document_chunk r, unnest(r.fts) u;
