-- ragfr 0017: no stored chunk metadata holds a `ragfr_` key (issue 47 item 7).
--
-- Why: the chat's evidence gate reads `ragfr_*` keys (a search's scores, the marker of a search that could
-- not run). Since issue 38 none is stored (Open WebUI's upload path drops them, `ragfr ingest` refuses them)
-- and ragfr's adapter drops any it reads back. But chunks stored before that still hold them, and Open WebUI
-- hands a chunk's stored metadata to the gate as is on its own read paths (full-context mode, a search with
-- hybrid search off): a PDF whose Info dictionary held `ragfr_search_unavailable` made every such chat refuse
-- with the file's text. The gate now reads only passages made in its own process
-- (ragfr.owui.runtime.provenance); this removes the stored keys themselves, so no read path, present or
-- future, meets them.
--
-- What: every top-level key whose case-folded name starts with `ragfr_` (ragfr.db.vmetadata.is_reserved), in
-- every collection; other keys are kept as they are. Only rows holding such a key are written: their text,
-- vector and fts do not change, so the index triggers leave the BM25 postings and statistics alone. Runs in
-- the migration's transaction: uploads to the rows it rewrites wait for it (a few rows on a database that
-- never stored such a key, none on most).

UPDATE document_chunk AS d
   SET vmetadata = (SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}'::jsonb)
                      FROM jsonb_each(d.vmetadata) AS e
                     WHERE lower(e.key) NOT LIKE 'ragfr\_%')
 WHERE EXISTS (SELECT 1
                 FROM jsonb_object_keys(CASE WHEN jsonb_typeof(d.vmetadata) = 'object' THEN d.vmetadata
                                             ELSE '{}'::jsonb END) AS k  -- null, an array: nothing to scrub
                WHERE lower(k) LIKE 'ragfr\_%');
