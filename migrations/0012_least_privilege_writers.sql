-- ragfr 0012: writers of document_chunk need no privilege on ragfr's own tables.
--
-- Open WebUI connects as a least-privilege role (the chart's database.ragfr.appUser): SELECT on the ragfr
-- tables, INSERT/UPDATE/DELETE on document_chunk, nothing that changes the schema (no ownership, no CREATE,
-- no TRUNCATE). Its writes fire the statement triggers of 0005-0007 (and of any later migration that
-- rewrites them, e.g. 0010's compact postings), which write ragfr_term_stats, ragfr_collection_stats and
-- the postings (ragfr_lex_docs, ragfr_lex_blocks). A trigger function runs with the privileges of the
-- session that fired it, so either the writer gets INSERT/UPDATE/DELETE on those tables, or the functions
-- run as their owner.
--
-- Chosen: the statement trigger functions of document_chunk become SECURITY DEFINER (they run as the schema
-- owner that created them, the migrations' role), with search_path pinned to this schema then pg_temp, so a
-- writer cannot redirect their unqualified names to objects of its own (it cannot create any in this schema,
-- and pg_temp comes last). Why not grants: with write access to the statistics and postings, the
-- application role could make them disagree with the chunks, and BM25 ranks would drift silently for every
-- collection. With SECURITY DEFINER only the triggers write them, so they stay exact whoever writes. The
-- functions cannot be called directly (a trigger function called outside a trigger is refused), so the
-- definer rights are reachable only through a write to document_chunk.
--
-- Every statement-level trigger function on document_chunk is converted, whatever its name, so functions a
-- migration before this one created or rewrote are covered. A LATER migration that does CREATE OR REPLACE on
-- one of them resets it to SECURITY INVOKER: it must repeat the attributes. tests/db/test_app_role.py fails
-- when one is missing (it checks the attributes and writes as the application role).
--
-- The row-level trigger (ragfr_document_chunk_fill, 0003/0009) stays SECURITY INVOKER: it only reads
-- ragfr_embedding_space, which the application role may read.
--
-- The grants themselves are not in a migration: the role's name is deployment configuration and the role
-- may appear after the schema exists. `ragfr migrate --app-role NAME` (the chart's migrations Job) applies
-- them after the migrations on every run, on every table that exists then (ragfr.db.approle).

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
END
$migration$;
