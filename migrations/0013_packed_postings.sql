-- ragfr 0013: each block's postings packed in bytea instead of int arrays.
--
-- Why: at 1M chunks a question of common words reads most of its terms' blocks (3,301 blocks, 422k postings
-- for the heaviest bench question; the per-block bounds skip under 1 %), and sending them as int4[] / int2[]
-- cost more than reading them: PostgreSQL's array output converts element by element (array_send and the
-- text form alike). Fetching those 3,323 blocks took 130-142 ms as arrays and 37-39 ms as bytea, which is
-- sent as is (docs/benchmarks.md, "packed postings"). The lexical arm set the hybrid's 1M latency.
--
-- Layout: the same columns, same meaning, now bytea: docnos = n x int4, tfs = n x int2, lens = n x int4, each
-- value big-endian (int4send / int2send, PostgreSQL's binary wire format), in docno order. A block of 128
-- postings is 1,280 bytes plus three 4-byte headers instead of three 24-byte array headers: still one inline
-- heap tuple under the 2 kB TOAST threshold. ragfr_lex_int4s / ragfr_lex_int2s give the arrays back in SQL
-- (for checks and ad-hoc queries); the lexical arm decodes the bytes with numpy, removal in place.
--
-- The rewrite holds an ACCESS EXCLUSIVE lock on ragfr_lex_blocks while it converts every block: writes to
-- document_chunk and lexical searches wait for it (docs/runbooks/chart-upgrade.md gives its length).

CREATE FUNCTION ragfr_lex_int4s(packed bytea) RETURNS integer[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg((get_byte(packed, i) << 24) | (get_byte(packed, i + 1) << 16)
                              | (get_byte(packed, i + 2) << 8) | get_byte(packed, i + 3) ORDER BY i), '{}')
      FROM generate_series(0, length(packed) - 4, 4) AS i;
$$;

CREATE FUNCTION ragfr_lex_int2s(packed bytea) RETURNS smallint[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(((get_byte(packed, i) << 8) | get_byte(packed, i + 1))::smallint ORDER BY i), '{}')
      FROM generate_series(0, length(packed) - 2, 2) AS i;
$$;

-- Only for the conversion below (dropped after it); the writers pack with string_agg directly.
CREATE FUNCTION ragfr_lex_pack4_0013(v integer[]) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT coalesce(string_agg(int4send(x), ''::bytea ORDER BY o), ''::bytea) FROM unnest(v) WITH ORDINALITY AS u(x, o);
$$;
CREATE FUNCTION ragfr_lex_pack2_0013(v smallint[]) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT coalesce(string_agg(int2send(x), ''::bytea ORDER BY o), ''::bytea) FROM unnest(v) WITH ORDINALITY AS u(x, o);
$$;

ALTER TABLE ragfr_lex_blocks
    ALTER COLUMN docnos TYPE bytea USING ragfr_lex_pack4_0013(docnos),
    ALTER COLUMN tfs TYPE bytea USING ragfr_lex_pack2_0013(tfs),
    ALTER COLUMN lens TYPE bytea USING ragfr_lex_pack4_0013(lens);
DROP FUNCTION ragfr_lex_pack4_0013(integer[]), ragfr_lex_pack2_0013(smallint[]);

-- As 0010's, packed: new postings are packed in docno order and appended to the tail block's bytes.
CREATE OR REPLACE FUNCTION ragfr_lex_add(colls text[], lexemes text[], docnos integer[], tfs integer[], lens integer[])
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
          FROM (SELECT c, l, tail, string_agg(int4send(d), ''::bytea ORDER BY d) AS ds,
                       string_agg(int2send(tf), ''::bytea ORDER BY d) AS ts,
                       string_agg(int4send(len), ''::bytea ORDER BY d) AS ls, count(*)::smallint AS k,
                       min(d) AS lo, max(d) AS hi, max(tf) AS max_tf, min(len) AS min_len
                  FROM y WHERE slot < room GROUP BY c, l, tail) f
         WHERE b.collection_name = f.c AND b.lexeme = f.l AND b.blk = f.tail
        RETURNING 1
    )
    INSERT INTO ragfr_lex_blocks (collection_name, lexeme, blk, lo, hi, n, max_tf, min_len, docnos, tfs, lens)
    SELECT c, l, min(d), min(d), max(d), count(*), max(tf), min(len),
           string_agg(int4send(d), ''::bytea ORDER BY d), string_agg(int2send(tf), ''::bytea ORDER BY d),
           string_agg(int4send(len), ''::bytea ORDER BY d)
      FROM y
     WHERE slot >= room
     GROUP BY c, l, (slot - room) / 128;
$$;

-- As 0010's: the block holding d is its key's last block with blk <= d. Each hit block is decoded once, in
-- place (byte offsets, no array built), its kept postings packed again with exact bounds; a block with none
-- left is deleted. One aggregate row per hit block: the delete and the update join it on the primary key
-- (an anti-join against the unaggregated postings was quadratic: 49 s for a 50-chunk document at 100k).
CREATE OR REPLACE FUNCTION ragfr_lex_remove(colls text[], lexemes text[], docnos integer[]) RETURNS void
    LANGUAGE sql AS $$
    WITH hit AS (
        SELECT b.collection_name, b.lexeme, b.blk, array_agg(u.d) AS gone
          FROM unnest(colls, lexemes, docnos) AS u(c, l, d)
          CROSS JOIN LATERAL (SELECT b.collection_name, b.lexeme, b.blk FROM ragfr_lex_blocks b
                               WHERE b.collection_name = u.c AND b.lexeme = u.l AND b.blk <= u.d
                               ORDER BY b.blk DESC LIMIT 1) b
         GROUP BY 1, 2, 3
    ), rest AS (
        SELECT h.collection_name, h.lexeme, h.blk, r.*
          FROM hit h
          JOIN ragfr_lex_blocks b ON b.collection_name = h.collection_name AND b.lexeme = h.lexeme AND b.blk = h.blk
          CROSS JOIN LATERAL (
              SELECT string_agg(substr(b.docnos, 4 * i + 1, 4), ''::bytea ORDER BY i) AS ds,
                     string_agg(substr(b.tfs, 2 * i + 1, 2), ''::bytea ORDER BY i) AS ts,
                     string_agg(substr(b.lens, 4 * i + 1, 4), ''::bytea ORDER BY i) AS ls,
                     count(*)::smallint AS k, min(v.d) AS lo, max(v.d) AS hi, max(v.tf) AS max_tf,
                     min(v.len) AS min_len
                FROM generate_series(0, b.n - 1) AS i
                CROSS JOIN LATERAL (
                    SELECT (get_byte(b.docnos, 4 * i) << 24) | (get_byte(b.docnos, 4 * i + 1) << 16)
                           | (get_byte(b.docnos, 4 * i + 2) << 8) | get_byte(b.docnos, 4 * i + 3) AS d,
                           ((get_byte(b.tfs, 2 * i) << 8) | get_byte(b.tfs, 2 * i + 1))::smallint AS tf,
                           (get_byte(b.lens, 4 * i) << 24) | (get_byte(b.lens, 4 * i + 1) << 16)
                           | (get_byte(b.lens, 4 * i + 2) << 8) | get_byte(b.lens, 4 * i + 3) AS len) v
               WHERE v.d <> ALL (h.gone)) r
    ), emptied AS (
        DELETE FROM ragfr_lex_blocks b USING rest r
         WHERE b.collection_name = r.collection_name AND b.lexeme = r.lexeme AND b.blk = r.blk AND r.k = 0
        RETURNING 1
    )
    UPDATE ragfr_lex_blocks b
       SET docnos = r.ds, tfs = r.ts, lens = r.ls, n = r.k, lo = r.lo, hi = r.hi, max_tf = r.max_tf,
           min_len = r.min_len
      FROM rest r
     WHERE b.collection_name = r.collection_name AND b.lexeme = r.lexeme AND b.blk = r.blk AND r.k > 0;
$$;
