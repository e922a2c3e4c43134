-- ragfr 0005: the corpus statistics BM25 needs, kept exact under every write.
--
-- BM25 scores a chunk from three numbers besides its own term frequencies: how many chunks contain each
-- term (df), how many chunks there are (n_docs) and their average length (total_len / n_docs). They are
-- kept per collection, because Open WebUI keeps one collection per knowledge base or file in ONE table
-- and a query names the collections it searches. Statement-level triggers with transition tables keep
-- them exact whoever writes (stock Open WebUI code included) at one aggregate per statement, not one per
-- row. Keys are locked in a fixed order (collection, lexeme) so concurrent writers wait, never deadlock.

CREATE TABLE ragfr_term_stats (
    collection_name text NOT NULL,
    lexeme text NOT NULL,
    df bigint NOT NULL CHECK (df >= 0),
    PRIMARY KEY (collection_name, lexeme)
);

CREATE TABLE ragfr_collection_stats (
    collection_name text PRIMARY KEY,
    n_docs bigint NOT NULL CHECK (n_docs >= 0),
    total_len bigint NOT NULL CHECK (total_len >= 0)
);

-- Deltas arrive as parallel arrays because transition tables are visible only inside the trigger
-- function itself, not in functions it calls. Increments upsert; decrements only ever meet existing rows
-- (they undo an earlier increment), so they update and then drop what reached zero. Rows are locked in
-- key order first, so two writers touching the same terms queue instead of deadlocking.
CREATE FUNCTION ragfr_bm25_apply_terms(colls text[], lexemes text[], deltas bigint[]) RETURNS void
    LANGUAGE sql AS $$
    SELECT 1 FROM ragfr_term_stats t, unnest(colls, lexemes) AS x(c, l)
     WHERE t.collection_name = x.c AND t.lexeme = x.l
     ORDER BY t.collection_name, t.lexeme FOR UPDATE OF t;
    INSERT INTO ragfr_term_stats AS t (collection_name, lexeme, df)
    SELECT c, l, d FROM unnest(colls, lexemes, deltas) AS x(c, l, d) WHERE d > 0 ORDER BY c, l
    ON CONFLICT (collection_name, lexeme) DO UPDATE SET df = t.df + EXCLUDED.df;
    UPDATE ragfr_term_stats t SET df = t.df + x.d
      FROM unnest(colls, lexemes, deltas) AS x(c, l, d)
     WHERE x.d < 0 AND t.collection_name = x.c AND t.lexeme = x.l;
    DELETE FROM ragfr_term_stats t USING unnest(colls, lexemes, deltas) AS x(c, l, d)
     WHERE x.d < 0 AND t.collection_name = x.c AND t.lexeme = x.l AND t.df = 0;
$$;

CREATE FUNCTION ragfr_bm25_apply_collections(colls text[], ndocs bigint[], lens bigint[]) RETURNS void
    LANGUAGE sql AS $$
    SELECT 1 FROM ragfr_collection_stats s, unnest(colls) AS x(c)
     WHERE s.collection_name = x.c ORDER BY s.collection_name FOR UPDATE OF s;
    INSERT INTO ragfr_collection_stats AS s (collection_name, n_docs, total_len)
    SELECT c, n, l FROM unnest(colls, ndocs, lens) AS x(c, n, l) WHERE n > 0 OR (n = 0 AND l > 0) ORDER BY c
    ON CONFLICT (collection_name) DO UPDATE
       SET n_docs = s.n_docs + EXCLUDED.n_docs, total_len = s.total_len + EXCLUDED.total_len;
    UPDATE ragfr_collection_stats s SET n_docs = s.n_docs + x.n, total_len = s.total_len + x.l
      FROM unnest(colls, ndocs, lens) AS x(c, n, l)
     WHERE (x.n < 0 OR (x.n = 0 AND x.l < 0)) AND s.collection_name = x.c;
    DELETE FROM ragfr_collection_stats s USING unnest(colls) AS x(c)
     WHERE s.collection_name = x.c AND s.n_docs = 0;
$$;

CREATE FUNCTION ragfr_bm25_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ragfr_bm25_apply_terms(array_agg(c), array_agg(l), array_agg(d))
       FROM (SELECT r.collection_name AS c, u.lexeme AS l, count(*) AS d
               FROM new_rows r, unnest(r.fts) u GROUP BY 1, 2) x;
    PERFORM ragfr_bm25_apply_collections(array_agg(c), array_agg(n), array_agg(l))
       FROM (SELECT collection_name AS c, count(*) AS n, sum(coalesce(fts_len, 0))::bigint AS l
               FROM new_rows GROUP BY 1) x;
    RETURN NULL;
END $$;

CREATE FUNCTION ragfr_bm25_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
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
    RETURN NULL;
END $$;

CREATE FUNCTION ragfr_bm25_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ragfr_bm25_apply_terms(array_agg(c), array_agg(l), array_agg(-d))
       FROM (SELECT r.collection_name AS c, u.lexeme AS l, count(*) AS d
               FROM old_rows r, unnest(r.fts) u GROUP BY 1, 2) x;
    PERFORM ragfr_bm25_apply_collections(array_agg(c), array_agg(-n), array_agg(-l))
       FROM (SELECT collection_name AS c, count(*) AS n, sum(coalesce(fts_len, 0))::bigint AS l
               FROM old_rows GROUP BY 1) x;
    RETURN NULL;
END $$;

CREATE FUNCTION ragfr_bm25_after_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM ragfr_term_stats;
    DELETE FROM ragfr_collection_stats;
    RETURN NULL;
END $$;

CREATE TRIGGER ragfr_bm25_insert AFTER INSERT ON document_chunk
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ragfr_bm25_after_insert();
CREATE TRIGGER ragfr_bm25_update AFTER UPDATE ON document_chunk
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ragfr_bm25_after_update();
CREATE TRIGGER ragfr_bm25_delete AFTER DELETE ON document_chunk
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ragfr_bm25_after_delete();
CREATE TRIGGER ragfr_bm25_truncate AFTER TRUNCATE ON document_chunk
    FOR EACH STATEMENT EXECUTE FUNCTION ragfr_bm25_after_truncate();

-- Rows that existed before this migration (an adopted Open WebUI table).
SELECT ragfr_bm25_apply_terms(array_agg(c), array_agg(l), array_agg(d))
  FROM (SELECT r.collection_name AS c, u.lexeme AS l, count(*) AS d
          FROM document_chunk r, unnest(r.fts) u GROUP BY 1, 2) x;
SELECT ragfr_bm25_apply_collections(array_agg(c), array_agg(n), array_agg(l))
  FROM (SELECT collection_name AS c, count(*) AS n, sum(coalesce(fts_len, 0))::bigint AS l
          FROM document_chunk GROUP BY 1) x;
