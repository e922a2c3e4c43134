-- ragfr 0015: the owner-rights trigger functions of document_chunk maintain document_chunk's index and
-- nothing else, and only ragfr's triggers can reach them (issue 25, item 1).
--
-- Why: 0012 made the statement trigger functions of document_chunk SECURITY DEFINER, so that Open WebUI's
-- least-privilege role (ragfr.db.approle) writes the BM25 tables only through them. It argued that they
-- "cannot be called directly". True, but they could be ATTACHED: EXECUTE on a function belongs to PUBLIC
-- by default, and every database lets PUBLIC create temporary tables. The application role could create a
-- temporary table, attach ragfr_lexidx_after_truncate / ragfr_bm25_after_truncate as its TRUNCATE
-- triggers and truncate it: the functions ran as the owner and emptied ragfr_lex_docs, ragfr_lex_blocks,
-- ragfr_term_stats and ragfr_collection_stats for every collection. With the AFTER INSERT functions and a
-- temporary table shaped like document_chunk (any collection_name, any fts), it added made-up postings and
-- document frequencies to any collection.
--
-- Three locks, each enough on its own against that attack (tests/db/test_index_tamper.py tries each):
-- 1. EXECUTE on every SECURITY DEFINER function of the schema is revoked from PUBLIC (and the application
--    role gets none: ragfr.db.approle checks that on every `ragfr migrate --app-role`). PostgreSQL checks
--    EXECUTE on a trigger function when CREATE TRIGGER names it, NOT when the trigger fires (verified on
--    the server by test_index_tamper.py): ragfr's own triggers, created by the owner, keep firing for every
--    writer, and nobody but the owner (and superusers) can attach the functions to anything else.
--    The SQL helpers those functions call to write the index (ragfr_bm25_apply_terms,
--    ragfr_bm25_apply_collections, ragfr_lex_add, ragfr_lex_remove, ragfr_bm25_writer_lock) run as the
--    caller, so a role without write access to the BM25 tables could not use them anyway; PUBLIC loses
--    EXECUTE on them too, so a later migration that makes one SECURITY DEFINER does not open them. The
--    triggers call them as the owner, which keeps EXECUTE.
-- 2. Each of these trigger functions checks that it runs as the trigger it was written for: on
--    document_chunk (TG_RELID), AFTER, FOR EACH STATEMENT, for its one operation. Attached anywhere else,
--    even by the owner or a superuser by mistake, it raises before touching anything.
-- 3. ragfr.db.approle revokes TEMP on the database from PUBLIC and from the application role: it can create
--    no table at all (it has no CREATE on the schema since 0012), so it has nothing to attach a trigger to.
--
-- The bodies below are the latest definitions (0005 for ragfr_bm25_after_truncate, 0010 for the others;
-- 0013 and 0100 changed none of them), unchanged after the guard. CREATE OR REPLACE resets a function's
-- attributes (0012's header): each one repeats SECURITY DEFINER here, and the block at the end pins the
-- search_path again, to this schema then pg_temp, as 0012 did. Owner and privileges survive a CREATE OR
-- REPLACE; the REVOKEs come last anyway.
--
-- Not here, in ragfr.db.approle (role names are deployment configuration): the application role may
-- INSERT and UPDATE only the columns Open WebUI writes (id, vector, collection_name, text, vmetadata), so
-- `UPDATE document_chunk SET fts = ..., fts_len = ...` without a text change (the fill trigger keeps the
-- writer's values then, and the statistics followed them) is refused. `ragfr verify-index` recounts the
-- index from document_chunk and repairs a damaged one (`ragfr verify-index --help`).

-- One message for every misuse: the function, and where and how it was fired.
CREATE FUNCTION ragfr_trigger_misuse(fn text, rel oid, tg_when text, tg_op text, tg_level text) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ragfr: % fired % % FOR EACH % on %: it maintains the BM25 index of document_chunk only',
        fn, tg_when, tg_op, tg_level, rel::regclass
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'ragfr''s trigger functions are attached by its migrations to document_chunk; attach nothing else to them';
END
$$;

-- 0010's body, after the guard.
CREATE OR REPLACE FUNCTION ragfr_bm25_after_insert() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF TG_RELID IS DISTINCT FROM 'document_chunk'::regclass OR TG_WHEN <> 'AFTER' OR TG_OP <> 'INSERT'
       OR TG_LEVEL <> 'STATEMENT' THEN
        PERFORM ragfr_trigger_misuse('ragfr_bm25_after_insert', TG_RELID, TG_WHEN, TG_OP, TG_LEVEL);
    END IF;
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

-- 0010's body, after the guard.
CREATE OR REPLACE FUNCTION ragfr_bm25_after_update() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF TG_RELID IS DISTINCT FROM 'document_chunk'::regclass OR TG_WHEN <> 'AFTER' OR TG_OP <> 'UPDATE'
       OR TG_LEVEL <> 'STATEMENT' THEN
        PERFORM ragfr_trigger_misuse('ragfr_bm25_after_update', TG_RELID, TG_WHEN, TG_OP, TG_LEVEL);
    END IF;
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

-- 0010's body, after the guard.
CREATE OR REPLACE FUNCTION ragfr_bm25_after_delete() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF TG_RELID IS DISTINCT FROM 'document_chunk'::regclass OR TG_WHEN <> 'AFTER' OR TG_OP <> 'DELETE'
       OR TG_LEVEL <> 'STATEMENT' THEN
        PERFORM ragfr_trigger_misuse('ragfr_bm25_after_delete', TG_RELID, TG_WHEN, TG_OP, TG_LEVEL);
    END IF;
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

-- 0005's body, after the guard.
CREATE OR REPLACE FUNCTION ragfr_bm25_after_truncate() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF TG_RELID IS DISTINCT FROM 'document_chunk'::regclass OR TG_WHEN <> 'AFTER' OR TG_OP <> 'TRUNCATE'
       OR TG_LEVEL <> 'STATEMENT' THEN
        PERFORM ragfr_trigger_misuse('ragfr_bm25_after_truncate', TG_RELID, TG_WHEN, TG_OP, TG_LEVEL);
    END IF;
    DELETE FROM ragfr_term_stats;
    DELETE FROM ragfr_collection_stats;
    RETURN NULL;
END $$;

-- 0010's body, after the guard.
CREATE OR REPLACE FUNCTION ragfr_lexidx_after_insert() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF TG_RELID IS DISTINCT FROM 'document_chunk'::regclass OR TG_WHEN <> 'AFTER' OR TG_OP <> 'INSERT'
       OR TG_LEVEL <> 'STATEMENT' THEN
        PERFORM ragfr_trigger_misuse('ragfr_lexidx_after_insert', TG_RELID, TG_WHEN, TG_OP, TG_LEVEL);
    END IF;
    INSERT INTO ragfr_lex_docs (chunk_id) SELECT id FROM new_rows ORDER BY collection_name, id;
    PERFORM ragfr_lex_add(array_agg(r.collection_name), array_agg(u.lexeme), array_agg(m.docno),
                          array_agg(cardinality(u.positions)), array_agg(coalesce(r.fts_len, 0)))
       FROM new_rows r JOIN ragfr_lex_docs m ON m.chunk_id = r.id, unnest(r.fts) u;
    RETURN NULL;
END $$;

-- 0010's body, after the guard.
CREATE OR REPLACE FUNCTION ragfr_lexidx_after_update() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF TG_RELID IS DISTINCT FROM 'document_chunk'::regclass OR TG_WHEN <> 'AFTER' OR TG_OP <> 'UPDATE'
       OR TG_LEVEL <> 'STATEMENT' THEN
        PERFORM ragfr_trigger_misuse('ragfr_lexidx_after_update', TG_RELID, TG_WHEN, TG_OP, TG_LEVEL);
    END IF;
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

-- 0010's body, after the guard.
CREATE OR REPLACE FUNCTION ragfr_lexidx_after_delete() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF TG_RELID IS DISTINCT FROM 'document_chunk'::regclass OR TG_WHEN <> 'AFTER' OR TG_OP <> 'DELETE'
       OR TG_LEVEL <> 'STATEMENT' THEN
        PERFORM ragfr_trigger_misuse('ragfr_lexidx_after_delete', TG_RELID, TG_WHEN, TG_OP, TG_LEVEL);
    END IF;
    PERFORM ragfr_lex_remove(array_agg(o.collection_name), array_agg(u.lexeme), array_agg(m.docno))
       FROM old_rows o JOIN ragfr_lex_docs m ON m.chunk_id = o.id, unnest(o.fts) u;
    DELETE FROM ragfr_lex_docs m USING old_rows o WHERE m.chunk_id = o.id;
    RETURN NULL;
END $$;

-- 0010's body, after the guard.
CREATE OR REPLACE FUNCTION ragfr_lexidx_after_truncate() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF TG_RELID IS DISTINCT FROM 'document_chunk'::regclass OR TG_WHEN <> 'AFTER' OR TG_OP <> 'TRUNCATE'
       OR TG_LEVEL <> 'STATEMENT' THEN
        PERFORM ragfr_trigger_misuse('ragfr_lexidx_after_truncate', TG_RELID, TG_WHEN, TG_OP, TG_LEVEL);
    END IF;
    TRUNCATE ragfr_lex_blocks, ragfr_lex_docs;
    RETURN NULL;
END $$;

-- Pin the search_path again (CREATE OR REPLACE dropped 0012's) and take EXECUTE away from PUBLIC on every
-- SECURITY DEFINER function of the schema, whatever its name, so one a migration before this one made is
-- covered too. Only the owner (implicitly) keeps it.
DO $migration$
DECLARE
    fn regprocedure;
BEGIN
    FOR fn IN
        SELECT DISTINCT t.tgfoid::regprocedure
          FROM pg_trigger t
         WHERE t.tgrelid = 'document_chunk'::regclass
           AND NOT t.tgisinternal
           AND (t.tgtype & 1) = 0  -- TRIGGER_TYPE_ROW unset: a statement-level trigger
    LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp', fn, current_schema());
    END LOOP;
    FOR fn IN
        SELECT p.oid::regprocedure FROM pg_proc p
         WHERE p.pronamespace = current_schema()::regnamespace AND p.prosecdef
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', fn);
    END LOOP;
END
$migration$;

-- The helpers that write the index (they run as the caller; see 1. above) and the guard's message.
REVOKE EXECUTE ON FUNCTION
    ragfr_bm25_apply_terms(text[], text[], bigint[]),
    ragfr_bm25_apply_collections(text[], bigint[], bigint[]),
    ragfr_lex_add(text[], text[], integer[], integer[], integer[]),
    ragfr_lex_remove(text[], text[], integer[]),
    ragfr_bm25_writer_lock(),
    ragfr_trigger_misuse(text, oid, text, text, text)
    FROM PUBLIC;
