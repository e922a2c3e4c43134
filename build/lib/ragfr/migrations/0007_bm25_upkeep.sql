-- ragfr 0007: BM25 upkeep that stays out of the way of writes that do not change the text, and a
-- postings table that autovacuum keeps index-only.
--
-- 1. 0005's update trigger counted every updated row out and back in. The sums came to zero for a row
--    whose text did not change, but it still locked the term-statistics row of every lexeme of that row.
--    An embedding-migration backfill or a metadata edit (vector or vmetadata only) therefore queued behind,
--    and blocked, every concurrent upload sharing a term. Now only rows whose id, collection or analysed
--    text changed are counted, as 0006 already does for the postings.
-- 2. The BM25 arm reads ragfr_postings by index-only scan. That is only index-only for pages the visibility
--    map marks all-visible. Until a VACUUM runs, every posting costs a heap visit. Measured once at 100k
--    chunks: the lexical arm's p50 inside hybrid search was 19 ms before a VACUUM and 7 ms after. Autovacuum's
--    default insert trigger (20 % of the table) lets an upload-heavy table drift far from that. These
--    thresholds vacuum after about 1 % new postings.

CREATE OR REPLACE FUNCTION ragfr_bm25_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Rows with the same (id, collection, fts, fts_len) on both sides are unchanged and drop out of both.
    -- The changed set is written out twice because transition tables are visible only in this function's
    -- own statements (no helper view or function can read them).
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

ALTER TABLE ragfr_postings SET (
    autovacuum_vacuum_insert_scale_factor = 0.01,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);
