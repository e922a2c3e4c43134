-- ragfr 0010: compact BM25 postings in blocks, with the per-block bounds that let the lexical arm stop early.
--
-- Why: ragfr_postings (0006) held one row per (collection, lexeme, chunk): 7.39 M rows and 1.13 GB at 100k
-- chunks, ~153 bytes per posting, most of it the chunk's text id (an Open WebUI uuid) and the collection
-- name repeated on every row and in the primary key. It also had no bounds, so a question made of common
-- words scored every posting of every term (the lexical arm's p95, docs/benchmarks.md).
--
-- Layout:
-- * ragfr_lex_docs gives every chunk VERSION a dense integer, its docno (one row per chunk: docno, text id).
--   A chunk whose id, collection or analysed text changes gets a new docno; postings are therefore only
--   ever appended at the high end, never inserted in the middle. document_chunk itself is untouched: stock
--   Open WebUI inserts naming only its own columns, and the embedding migration's column swaps, still work.
-- * ragfr_lex_blocks holds the postings of one (collection, lexeme) in blocks of up to 128 docnos, sorted,
--   in parallel arrays (docnos int4[], tfs int2[] (a tsvector keeps at most 256 positions per lexeme),
--   lens int4[] = the chunk's fts_len). Each block carries its docno range and its largest tf and smallest
--   length. BM25's term score rises with tf and falls with length for any k1 >= 0, 0 <= b <= 1 and avgdl,
--   so idf * score(max_tf, min_len) bounds every posting of the block, computed at query time.
--   The primary key INCLUDEs those bounds: the query reads them by index-only scan, without the arrays.
--   128 postings x (4 + 2 + 4 bytes) plus array headers stay under the 2 kB TOAST threshold: a block
--   is one inline heap tuple, read without detoasting.
--
-- Measured at 100k chunks (docs/benchmarks.md, docs/bench/lexical-blocks-100k.json): 68,584 blocks and
-- 100k docnos take 110.5 MB against 1,185.6 MB for ragfr_postings (15 vs 160 bytes per posting, 9.3 %);
-- the lexical arm's p95 went from 18.3-26.5 ms to 7.4-11.1 ms on the same rows (quiet to busy machine), same results.
--
-- Exactness under writes: statement triggers, like 0006's, after the statistics triggers of 0005/0007
-- (triggers fire in name order: ragfr_bm25_* before ragfr_lexidx_*). Blocks of one (collection, lexeme)
-- are shared by every chunk holding the lexeme, so two writers could both append to the same tail block.
-- They cannot do so at the same time: every writer that changes postings of (collection, lexeme) first
-- holds that key's ragfr_term_stats row (inserts and deletes change its df; text updates now lock every
-- key of the rows they change, below) until it commits, taken in key order. The tail a writer appends to
-- is therefore the one the previous writer of that key committed.

CREATE SEQUENCE ragfr_lex_docno AS integer;

CREATE TABLE ragfr_lex_docs (
    docno integer PRIMARY KEY DEFAULT nextval('ragfr_lex_docno'),
    chunk_id text NOT NULL UNIQUE
);
ALTER SEQUENCE ragfr_lex_docno OWNED BY ragfr_lex_docs.docno;

CREATE TABLE ragfr_lex_blocks (
    collection_name text NOT NULL,
    lexeme text NOT NULL,
    blk integer NOT NULL,            -- the docno that opened the block: its identity, never changed
    lo integer NOT NULL,             -- smallest and largest docno in it
    hi integer NOT NULL,
    n smallint NOT NULL,             -- postings in it (1..128)
    max_tf smallint NOT NULL,
    min_len integer NOT NULL,
    docnos integer[] NOT NULL,
    tfs smallint[] NOT NULL,
    lens integer[] NOT NULL,
    PRIMARY KEY (collection_name, lexeme, blk) INCLUDE (lo, hi, n, max_tf, min_len)
);

-- Appending to a tail block rewrites that row, and its bounds, which the primary key INCLUDEs: the update
-- is never HOT and adds a key entry. Keep room on the page for the new version, and let autovacuum reclaim
-- the dead ones and keep the visibility map current (the bounds are read index-only), as 0007 did.
ALTER TABLE ragfr_lex_blocks SET (
    fillfactor = 90,
    autovacuum_vacuum_insert_scale_factor = 0.01,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);

-- Append postings, given as parallel arrays (one element per (collection, lexeme, docno)). Every docno is
-- newer than all those already in the key's blocks (a fresh chunk version, numbered while this writer
-- holds the key), so postings go at the end: into the key's tail block while it has room, the rest into
-- new blocks of 128. One statement: the tail's room is read once, before it changes.
CREATE FUNCTION ragfr_lex_add(colls text[], lexemes text[], docnos integer[], tfs integer[], lens integer[])
    RETURNS void LANGUAGE sql AS $$
    WITH x AS (
        SELECT c, l, d, tf::smallint AS tf, len,
               (row_number() OVER (PARTITION BY c, l ORDER BY d) - 1)::integer AS slot
          FROM unnest(colls, lexemes, docnos, tfs, lens) AS u(c, l, d, tf, len)
    ), tail AS (  -- one backward index probe per key (a common lexeme has hundreds of blocks)
        SELECT k.c AS collection_name, k.l AS lexeme, t.blk, 128 - t.n AS room
          FROM (SELECT DISTINCT c, l FROM x) k
          CROSS JOIN LATERAL (SELECT b.blk, b.n FROM ragfr_lex_blocks b
                               WHERE b.collection_name = k.c AND b.lexeme = k.l
                               ORDER BY b.blk DESC LIMIT 1) t
    ), y AS (
        SELECT x.*, t.blk AS tail, coalesce(t.room, 0) AS room
          FROM x LEFT JOIN tail t ON t.collection_name = x.c AND t.lexeme = x.l
    ), appended AS (
        UPDATE ragfr_lex_blocks b
           SET docnos = b.docnos || f.ds, tfs = b.tfs || f.ts, lens = b.lens || f.ls,
               n = b.n + f.k, lo = least(b.lo, f.lo), hi = greatest(b.hi, f.hi),
               max_tf = greatest(b.max_tf, f.max_tf), min_len = least(b.min_len, f.min_len)
          FROM (SELECT c, l, tail, array_agg(d ORDER BY d) AS ds, array_agg(tf ORDER BY d) AS ts,
                       array_agg(len ORDER BY d) AS ls, count(*)::smallint AS k, min(d) AS lo, max(d) AS hi,
                       max(tf) AS max_tf, min(len) AS min_len
                  FROM y WHERE slot < room GROUP BY c, l, tail) f
         WHERE b.collection_name = f.c AND b.lexeme = f.l AND b.blk = f.tail
        RETURNING 1
    )
    INSERT INTO ragfr_lex_blocks (collection_name, lexeme, blk, lo, hi, n, max_tf, min_len, docnos, tfs, lens)
    SELECT c, l, min(d), min(d), max(d), count(*), max(tf), min(len),
           array_agg(d ORDER BY d), array_agg(tf ORDER BY d), array_agg(len ORDER BY d)
      FROM y
     WHERE slot >= room
     GROUP BY c, l, (slot - room) / 128;
$$;

-- Remove postings (parallel arrays). A key's blocks hold increasing, disjoint docno ranges and a block's
-- blk is at most its smallest docno, so the block holding d is the key's last block with blk <= d: one
-- backward index probe. A block left empty is deleted; the others are rewritten with exact bounds.
CREATE FUNCTION ragfr_lex_remove(colls text[], lexemes text[], docnos integer[]) RETURNS void
    LANGUAGE sql AS $$
    WITH hit AS (
        SELECT b.collection_name, b.lexeme, b.blk, array_agg(u.d) AS gone
          FROM unnest(colls, lexemes, docnos) AS u(c, l, d)
          CROSS JOIN LATERAL (SELECT b.collection_name, b.lexeme, b.blk FROM ragfr_lex_blocks b
                               WHERE b.collection_name = u.c AND b.lexeme = u.l AND b.blk <= u.d
                               ORDER BY b.blk DESC LIMIT 1) b
         GROUP BY 1, 2, 3
    ), emptied AS (
        DELETE FROM ragfr_lex_blocks b USING hit h
         WHERE b.collection_name = h.collection_name AND b.lexeme = h.lexeme AND b.blk = h.blk
           AND b.docnos <@ h.gone
        RETURNING 1
    )
    UPDATE ragfr_lex_blocks b
       SET (docnos, tfs, lens, n, lo, hi, max_tf, min_len) =
           (SELECT array_agg(v.d ORDER BY v.o), array_agg(v.tf ORDER BY v.o), array_agg(v.len ORDER BY v.o),
                   count(*), min(v.d), max(v.d), max(v.tf), min(v.len)
              FROM unnest(b.docnos, b.tfs, b.lens) WITH ORDINALITY AS v(d, tf, len, o)
             WHERE v.d <> ALL (h.gone))
      FROM hit h
     WHERE b.collection_name = h.collection_name AND b.lexeme = h.lexeme AND b.blk = h.blk
       AND NOT b.docnos <@ h.gone;
$$;

-- Transition tables are visible only in the trigger function's own statements, hence the repetition.
CREATE FUNCTION ragfr_lexidx_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ragfr_lex_docs (chunk_id) SELECT id FROM new_rows ORDER BY collection_name, id;
    PERFORM ragfr_lex_add(array_agg(r.collection_name), array_agg(u.lexeme), array_agg(m.docno),
                          array_agg(cardinality(u.positions)), array_agg(coalesce(r.fts_len, 0)))
       FROM new_rows r JOIN ragfr_lex_docs m ON m.chunk_id = r.id, unnest(r.fts) u;
    RETURN NULL;
END $$;

-- Rows whose id, collection and analysed text are unchanged (a vector or metadata edit, an embedding
-- backfill) keep their docno and cost nothing; the others are removed and added back under a new docno.
CREATE FUNCTION ragfr_lexidx_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ragfr_lex_remove(array_agg(o.collection_name), array_agg(u.lexeme), array_agg(m.docno))
       FROM old_rows o JOIN ragfr_lex_docs m ON m.chunk_id = o.id, unnest(o.fts) u
      WHERE NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.id = o.id AND n.collection_name = o.collection_name
                           AND n.fts IS NOT DISTINCT FROM o.fts);
    DELETE FROM ragfr_lex_docs m USING old_rows o
     WHERE m.chunk_id = o.id
       AND NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.id = o.id AND n.collection_name = o.collection_name
                          AND n.fts IS NOT DISTINCT FROM o.fts);
    INSERT INTO ragfr_lex_docs (chunk_id)
    SELECT n.id FROM new_rows n
     WHERE NOT EXISTS (SELECT 1 FROM old_rows o WHERE n.id = o.id AND n.collection_name = o.collection_name
                          AND n.fts IS NOT DISTINCT FROM o.fts)
     ORDER BY n.collection_name, n.id;
    PERFORM ragfr_lex_add(array_agg(r.collection_name), array_agg(u.lexeme), array_agg(m.docno),
                          array_agg(cardinality(u.positions)), array_agg(coalesce(r.fts_len, 0)))
       FROM new_rows r JOIN ragfr_lex_docs m ON m.chunk_id = r.id, unnest(r.fts) u
      WHERE NOT EXISTS (SELECT 1 FROM old_rows o WHERE r.id = o.id AND r.collection_name = o.collection_name
                           AND r.fts IS NOT DISTINCT FROM o.fts);
    RETURN NULL;
END $$;

CREATE FUNCTION ragfr_lexidx_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ragfr_lex_remove(array_agg(o.collection_name), array_agg(u.lexeme), array_agg(m.docno))
       FROM old_rows o JOIN ragfr_lex_docs m ON m.chunk_id = o.id, unnest(o.fts) u;
    DELETE FROM ragfr_lex_docs m USING old_rows o WHERE m.chunk_id = o.id;
    RETURN NULL;
END $$;

CREATE FUNCTION ragfr_lexidx_after_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE ragfr_lex_blocks, ragfr_lex_docs;
    RETURN NULL;
END $$;

-- One writer of analysed text at a time. Each trigger locks its statistics keys in key order, but an
-- Open WebUI upsert (INSERT ... ON CONFLICT DO UPDATE) runs two statement triggers, insert then update,
-- each with its own ordered pass: two such upserts deadlocked in tests/retrieval/test_lexical_blocks.py
-- (and could before this migration). A transaction-level advisory lock taken before any statistics row
-- makes the order global. Statements that change no analysed text (vector or metadata edits, embedding
-- backfills) do not take it. Text writes to different collections now queue too; they are short (the
-- embedding happens before the write).
CREATE FUNCTION ragfr_bm25_writer_lock() RETURNS void LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(1919510118, 10);  -- ("ragf", migration 10); two-key space: never a one-key lock
$$;

CREATE OR REPLACE FUNCTION ragfr_bm25_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_rows) THEN
        PERFORM ragfr_bm25_writer_lock();
    END IF;
    PERFORM ragfr_bm25_apply_terms(array_agg(c), array_agg(l), array_agg(d))
       FROM (SELECT r.collection_name AS c, u.lexeme AS l, count(*) AS d
               FROM new_rows r, unnest(r.fts) u GROUP BY 1, 2) x;
    PERFORM ragfr_bm25_apply_collections(array_agg(c), array_agg(n), array_agg(l))
       FROM (SELECT collection_name AS c, count(*) AS n, sum(coalesce(fts_len, 0))::bigint AS l
               FROM new_rows GROUP BY 1) x;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION ragfr_bm25_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM old_rows) THEN
        PERFORM ragfr_bm25_writer_lock();
    END IF;
    PERFORM ragfr_bm25_apply_terms(array_agg(c), array_agg(l), array_agg(-d))
       FROM (SELECT r.collection_name AS c, u.lexeme AS l, count(*) AS d
               FROM old_rows r, unnest(r.fts) u GROUP BY 1, 2) x;
    PERFORM ragfr_bm25_apply_collections(array_agg(c), array_agg(-n), array_agg(-l))
       FROM (SELECT collection_name AS c, count(*) AS n, sum(coalesce(fts_len, 0))::bigint AS l
               FROM old_rows GROUP BY 1) x;
    RETURN NULL;
END $$;

-- 0007's update trigger locked only the statistics rows whose df changes. A text edit that keeps a lexeme
-- (df unchanged) still rewrites that key's blocks (new docno, new length), so the key must be held too:
-- every existing key of every changed row, old and new text, in key order, in one pass. Rows whose text
-- did not change still lock nothing.
CREATE OR REPLACE FUNCTION ragfr_bm25_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM old_rows o WHERE NOT EXISTS (
                   SELECT 1 FROM new_rows n WHERE o.id = n.id AND o.collection_name = n.collection_name
                      AND o.fts IS NOT DISTINCT FROM n.fts))
       OR EXISTS (SELECT 1 FROM new_rows n WHERE NOT EXISTS (
                   SELECT 1 FROM old_rows o WHERE o.id = n.id AND o.collection_name = n.collection_name
                      AND o.fts IS NOT DISTINCT FROM n.fts)) THEN
        PERFORM ragfr_bm25_writer_lock();
    END IF;
    PERFORM 1 FROM ragfr_term_stats t
      WHERE (t.collection_name, t.lexeme) IN (
            SELECT r.collection_name, u.lexeme
              FROM (SELECT n.collection_name, n.fts FROM new_rows n
                     WHERE NOT EXISTS (SELECT 1 FROM old_rows o WHERE o.id = n.id
                                          AND o.collection_name = n.collection_name
                                          AND o.fts IS NOT DISTINCT FROM n.fts)
                    UNION ALL
                    SELECT o.collection_name, o.fts FROM old_rows o
                     WHERE NOT EXISTS (SELECT 1 FROM new_rows n WHERE o.id = n.id
                                          AND o.collection_name = n.collection_name
                                          AND o.fts IS NOT DISTINCT FROM n.fts)) r,
                   unnest(r.fts) u)
      ORDER BY t.collection_name, t.lexeme
        FOR UPDATE OF t;
    -- Unchanged from 0007 below.
    PERFORM ragfr_bm25_apply_terms(array_agg(c), array_agg(l), array_agg(d))
       FROM (SELECT r.collection_name AS c, u.lexeme AS l, sum(r.sign)::bigint AS d
               FROM (SELECT 1 AS sign, n.collection_name, n.fts FROM new_rows n
                      WHERE NOT EXISTS (SELECT 1 FROM old_rows o WHERE o.id = n.id
                                           AND o.collection_name = n.collection_name
                                           AND o.fts IS NOT DISTINCT FROM n.fts)
                     UNION ALL
                     SELECT -1, o.collection_name, o.fts FROM old_rows o
                      WHERE NOT EXISTS (SELECT 1 FROM new_rows n WHERE o.id = n.id
                                           AND o.collection_name = n.collection_name
                                           AND o.fts IS NOT DISTINCT FROM n.fts)) r,
                    unnest(r.fts) u
              GROUP BY 1, 2) x
      WHERE d <> 0;
    PERFORM ragfr_bm25_apply_collections(array_agg(c), array_agg(dn), array_agg(dl))
       FROM (SELECT r.collection_name AS c, sum(r.sign)::bigint AS dn, sum(r.sign * r.len)::bigint AS dl
               FROM (SELECT 1 AS sign, n.collection_name, coalesce(n.fts_len, 0) AS len FROM new_rows n
                      WHERE NOT EXISTS (SELECT 1 FROM old_rows o WHERE o.id = n.id
                                           AND o.collection_name = n.collection_name
                                           AND o.fts IS NOT DISTINCT FROM n.fts)
                     UNION ALL
                     SELECT -1, o.collection_name, coalesce(o.fts_len, 0) FROM old_rows o
                      WHERE NOT EXISTS (SELECT 1 FROM new_rows n WHERE o.id = n.id
                                           AND o.collection_name = n.collection_name
                                           AND o.fts IS NOT DISTINCT FROM n.fts)) r
              GROUP BY 1) x
      WHERE dn <> 0 OR dl <> 0;
    RETURN NULL;
END $$;

-- Found by this migration's write tests: 0005's collection upsert sent a delta with more chunks but less
-- total length (an Open WebUI upsert that moves short chunks in and shortens others, in one statement) to
-- INSERT ... ON CONFLICT, whose CHECK (total_len >= 0) is tested on the proposed row before the conflict
-- is: the statement failed. Only all-non-negative deltas are upserted now; mixed ones meet existing rows
-- (they change chunks already counted there) and are plain updates.
CREATE OR REPLACE FUNCTION ragfr_bm25_apply_collections(colls text[], ndocs bigint[], lens bigint[]) RETURNS void
    LANGUAGE sql AS $$
    SELECT 1 FROM ragfr_collection_stats s, unnest(colls) AS x(c)
     WHERE s.collection_name = x.c ORDER BY s.collection_name FOR UPDATE OF s;
    INSERT INTO ragfr_collection_stats AS s (collection_name, n_docs, total_len)
    SELECT c, n, l FROM unnest(colls, ndocs, lens) AS x(c, n, l) WHERE n >= 0 AND l >= 0 AND (n > 0 OR l > 0)
     ORDER BY c
    ON CONFLICT (collection_name) DO UPDATE
       SET n_docs = s.n_docs + EXCLUDED.n_docs, total_len = s.total_len + EXCLUDED.total_len;
    UPDATE ragfr_collection_stats s SET n_docs = s.n_docs + x.n, total_len = s.total_len + x.l
      FROM unnest(colls, ndocs, lens) AS x(c, n, l)
     WHERE (x.n < 0 OR x.l < 0) AND s.collection_name = x.c;
    DELETE FROM ragfr_collection_stats s USING unnest(colls) AS x(c)
     WHERE s.collection_name = x.c AND s.n_docs = 0;
$$;

-- The row-per-posting table goes; its triggers first. DROP TRIGGER takes an ACCESS EXCLUSIVE lock on
-- document_chunk that the build below then runs under: no write slips between the build and the new
-- triggers, and no search runs during the backfill either (docs/runbooks/chart-upgrade.md gives its length).
DROP TRIGGER ragfr_postings_insert ON document_chunk;
DROP TRIGGER ragfr_postings_update ON document_chunk;
DROP TRIGGER ragfr_postings_delete ON document_chunk;
DROP TRIGGER ragfr_postings_truncate ON document_chunk;
DROP FUNCTION ragfr_postings_after_insert(), ragfr_postings_after_update(), ragfr_postings_after_delete(),
              ragfr_postings_after_truncate();
DROP TABLE ragfr_postings;

CREATE TRIGGER ragfr_lexidx_insert AFTER INSERT ON document_chunk
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ragfr_lexidx_after_insert();
CREATE TRIGGER ragfr_lexidx_update AFTER UPDATE ON document_chunk
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ragfr_lexidx_after_update();
CREATE TRIGGER ragfr_lexidx_delete AFTER DELETE ON document_chunk
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ragfr_lexidx_after_delete();
CREATE TRIGGER ragfr_lexidx_truncate AFTER TRUNCATE ON document_chunk
    FOR EACH STATEMENT EXECUTE FUNCTION ragfr_lexidx_after_truncate();

-- Rows that existed before this migration: docnos dense per collection, blocks of 128 per key.
INSERT INTO ragfr_lex_docs (chunk_id) SELECT id FROM document_chunk ORDER BY collection_name, id;
INSERT INTO ragfr_lex_blocks (collection_name, lexeme, blk, lo, hi, n, max_tf, min_len, docnos, tfs, lens)
SELECT c, l, min(d), min(d), max(d), count(*), max(tf), min(len),
       array_agg(d ORDER BY d), array_agg(tf ORDER BY d), array_agg(len ORDER BY d)
  FROM (SELECT r.collection_name AS c, u.lexeme AS l, m.docno AS d, cardinality(u.positions)::smallint AS tf,
               coalesce(r.fts_len, 0) AS len,
               (row_number() OVER (PARTITION BY r.collection_name, u.lexeme ORDER BY m.docno) - 1) / 128 AS g
          FROM document_chunk r JOIN ragfr_lex_docs m ON m.chunk_id = r.id, unnest(r.fts) u) x
 GROUP BY c, l, g;
