"""Recount the BM25 index of a collection from document_chunk, compare it with what is stored, rebuild it.

The index (migrations 0005, 0010, 0013) is kept exact by the statement triggers of document_chunk: per
collection ragfr_collection_stats (n_docs, total_len) and ragfr_term_stats (df per lexeme); per chunk
version a docno in ragfr_lex_docs; per (collection, lexeme) the postings in ragfr_lex_blocks, blocks of up
to 128 (docno, tf, length) packed big-endian in bytea, with exact bounds (lo, hi, n, max_tf, min_len).
Everything here follows from document_chunk's rows, and fts, fts_len follow from text (the fill trigger,
0003/0009). `verify` recounts all of it and counts what differs; `repair` rebuilds one collection's rows
from document_chunk in one transaction, under the lock every text writer's trigger takes first
(ragfr_bm25_writer_lock, 0010), so no write interleaves.

The comparison reads one REPEATABLE READ snapshot and takes no lock: a writer's rows and its trigger's
index changes commit together, so every snapshot of a sound index is consistent. It reads every chunk of
the collection and re-analyses its text (ragfr_to_tsvector), which is most of the cost: several times the
time without the re-analysis (`text=False`; both measured per 10k chunks in docs/runbooks/chart-upgrade.md).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import psycopg

# Where the index stands for one collection; every count is a number of rows that differ from the recount.
# Re-analysing the text is most of the cost (ragfr_to_tsvector, once per chunk: OFFSET 0 keeps the planner
# from copying the call into both comparisons).
_STALE = """(SELECT count(*) FROM chunks r CROSS JOIN LATERAL (SELECT ragfr_to_tsvector(r.text) AS v OFFSET 0) a
      WHERE r.fts IS DISTINCT FROM a.v OR r.fts_len IS DISTINCT FROM ragfr_tsvector_token_count(a.v))"""
_COMPARE = """
WITH chunks AS (
    SELECT id, text, fts, fts_len FROM document_chunk WHERE collection_name = %(c)s
), want_terms AS (
    SELECT u.lexeme, count(*) AS df FROM chunks r, unnest(r.fts) u GROUP BY 1
), have_terms AS (
    SELECT lexeme, df FROM ragfr_term_stats WHERE collection_name = %(c)s
), want_postings AS (
    SELECT u.lexeme, r.id AS chunk_id, cardinality(u.positions) AS tf, coalesce(r.fts_len, 0) AS len
      FROM chunks r, unnest(r.fts) u
), have_postings AS (
    SELECT b.lexeme, m.chunk_id, p.tf::integer AS tf, p.len
      FROM ragfr_lex_blocks b
     CROSS JOIN LATERAL unnest(ragfr_lex_int4s(b.docnos), ragfr_lex_int2s(b.tfs), ragfr_lex_int4s(b.lens))
           AS p(d, tf, len)
      LEFT JOIN ragfr_lex_docs m ON m.docno = p.d
     WHERE b.collection_name = %(c)s
), postings AS (
    SELECT w.chunk_id AS want, h.chunk_id AS have, w.tf IS NOT DISTINCT FROM h.tf
           AND w.len IS NOT DISTINCT FROM h.len AS same
      FROM want_postings w FULL JOIN have_postings h ON h.lexeme = w.lexeme AND h.chunk_id = w.chunk_id
), blocks AS (
    SELECT b.*, ragfr_lex_int4s(b.docnos) AS ds, ragfr_lex_int2s(b.tfs) AS ts, ragfr_lex_int4s(b.lens) AS ls,
           lag(b.hi) OVER (PARTITION BY b.lexeme ORDER BY b.blk) AS prev_hi
      FROM ragfr_lex_blocks b WHERE b.collection_name = %(c)s
)
SELECT
    (SELECT count(*) FROM chunks),
    {stale},
    (SELECT count(*) FROM (SELECT count(*) AS n, coalesce(sum(coalesce(fts_len, 0)), 0) AS len FROM chunks
                            HAVING count(*) > 0) w
       FULL JOIN (SELECT n_docs, total_len FROM ragfr_collection_stats WHERE collection_name = %(c)s) h ON true
      WHERE w.n IS DISTINCT FROM h.n_docs OR w.len IS DISTINCT FROM h.total_len),
    (SELECT count(*) FROM want_terms w FULL JOIN have_terms h ON h.lexeme = w.lexeme
      WHERE w.df IS DISTINCT FROM h.df),
    (SELECT count(*) FROM chunks r WHERE NOT EXISTS (SELECT 1 FROM ragfr_lex_docs m WHERE m.chunk_id = r.id)),
    (SELECT count(*) FROM postings WHERE have IS NULL),
    (SELECT count(*) FROM postings WHERE want IS NULL),
    (SELECT count(*) FROM postings WHERE want IS NOT NULL AND have IS NOT NULL AND NOT same),
    (SELECT count(*) FROM blocks
      WHERE (n BETWEEN 1 AND 128 AND length(docnos) = 4 * n AND length(tfs) = 2 * n AND length(lens) = 4 * n
             AND lo = ds[1] AND hi = ds[n] AND blk <= lo AND (prev_hi IS NULL OR prev_hi < lo)
             AND max_tf = (SELECT max(v) FROM unnest(ts) v) AND min_len = (SELECT min(v) FROM unnest(ls) v)
             AND ds = (SELECT array_agg(v ORDER BY v) FROM (SELECT DISTINCT v FROM unnest(ds) v) s)) IS NOT TRUE)
"""

# The stored index of one collection, recomputed from document_chunk (0010's backfill, packed as 0013's writers
# pack). Docnos are new (the sequence's next values, chunk ids in order): each key's blocks are appended at the
# high end as the triggers would, their ranges increasing and disjoint.
_DELETE = (
    "DELETE FROM ragfr_lex_docs m WHERE m.chunk_id IN (SELECT id FROM document_chunk WHERE collection_name = %(c)s)"
    "    OR (m.docno IN (SELECT p.d FROM ragfr_lex_blocks b, unnest(ragfr_lex_int4s(b.docnos)) AS p(d)"
    "                    WHERE b.collection_name = %(c)s)"
    "        AND NOT EXISTS (SELECT 1 FROM document_chunk d WHERE d.id = m.chunk_id))",
    "DELETE FROM ragfr_lex_blocks WHERE collection_name = %(c)s",
    "DELETE FROM ragfr_term_stats WHERE collection_name = %(c)s",
    "DELETE FROM ragfr_collection_stats WHERE collection_name = %(c)s",
)
_REBUILD = (
    "INSERT INTO ragfr_collection_stats (collection_name, n_docs, total_len)"
    " SELECT %(c)s, count(*), coalesce(sum(coalesce(fts_len, 0)), 0) FROM document_chunk"
    "  WHERE collection_name = %(c)s HAVING count(*) > 0",
    "INSERT INTO ragfr_term_stats (collection_name, lexeme, df)"
    " SELECT %(c)s, u.lexeme, count(*) FROM document_chunk r, unnest(r.fts) u"
    "  WHERE r.collection_name = %(c)s GROUP BY u.lexeme",
    "INSERT INTO ragfr_lex_docs (chunk_id) SELECT id FROM document_chunk WHERE collection_name = %(c)s ORDER BY id",
    "INSERT INTO ragfr_lex_blocks (collection_name, lexeme, blk, lo, hi, n, max_tf, min_len, docnos, tfs, lens)"
    " SELECT %(c)s, l, min(d), min(d), max(d), count(*), max(tf), min(len),"
    "        string_agg(int4send(d), ''::bytea ORDER BY d), string_agg(int2send(tf), ''::bytea ORDER BY d),"
    "        string_agg(int4send(len), ''::bytea ORDER BY d)"
    "   FROM (SELECT u.lexeme AS l, m.docno AS d, cardinality(u.positions)::smallint AS tf,"
    "                coalesce(r.fts_len, 0) AS len,"
    "                (row_number() OVER (PARTITION BY u.lexeme ORDER BY m.docno) - 1) / 128 AS g"
    "           FROM document_chunk r JOIN ragfr_lex_docs m ON m.chunk_id = r.id, unnest(r.fts) u"
    "          WHERE r.collection_name = %(c)s) x"
    "  GROUP BY l, g",
)


@dataclass(frozen=True)
class Check:
    """One collection's index against its recount. Every field but `chunks` counts rows that differ."""

    collection: str
    chunks: int  # chunks of the collection in document_chunk
    stale_fts: int | None  # chunks whose fts or fts_len is not what their text analyses to (None: not checked)
    collection_stats: int  # 0 or 1: ragfr_collection_stats' row (n_docs, total_len) is wrong or missing
    term_stats: int  # lexemes whose df is wrong, missing or extra in ragfr_term_stats
    docs_missing: int  # chunks without a docno in ragfr_lex_docs
    postings_missing: int  # (lexeme, chunk) postings the blocks lack
    postings_extra: int  # postings the blocks hold for no such (lexeme, chunk), or for an unknown docno
    postings_wrong: int  # postings with the wrong tf or length
    blocks_malformed: int  # blocks with wrong sizes, order, bounds, or overlapping the previous one of their key

    @property
    def differences(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("collection", "chunks") and getattr(self, f.name)}  # None and 0 are clean

    @property
    def clean(self) -> bool:
        return not self.differences


def collections(conn: psycopg.Connection) -> list[str]:
    """Every collection document_chunk or the index knows (a collection only the index knows is damage)."""
    return [r[0] for r in conn.execute(
        "SELECT collection_name FROM document_chunk UNION SELECT collection_name FROM ragfr_collection_stats"
        " UNION SELECT collection_name FROM ragfr_term_stats UNION SELECT collection_name FROM ragfr_lex_blocks"
        " ORDER BY 1")]


def known(conn: psycopg.Connection, collection: str) -> bool:
    """Whether a chunk or an index row names `collection` (each probe is one index lookup)."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM document_chunk WHERE collection_name = %(c)s)"
        "    OR EXISTS (SELECT 1 FROM ragfr_collection_stats WHERE collection_name = %(c)s)"
        "    OR EXISTS (SELECT 1 FROM ragfr_term_stats WHERE collection_name = %(c)s)"
        "    OR EXISTS (SELECT 1 FROM ragfr_lex_blocks WHERE collection_name = %(c)s)", {"c": collection}).fetchone()
    return bool(row and row[0])


def orphan_docs(conn: psycopg.Connection) -> int:
    """Docnos of chunks that no longer exist (belonging to no collection, only `--all` sees them)."""
    row = conn.execute("SELECT count(*) FROM ragfr_lex_docs m"
                       " WHERE NOT EXISTS (SELECT 1 FROM document_chunk d WHERE d.id = m.chunk_id)").fetchone()
    assert row is not None
    return int(row[0])


def verify(conn: psycopg.Connection, collection: str, *, text: bool = True) -> Check:
    """Compare `collection`'s stored index with its recount. Reads only; run it in a REPEATABLE READ
    transaction (see `snapshot`) to compare several collections at one instant. `text=False` trusts fts and
    fts_len (stale_fts None): the index is still recounted from them, in a tenth of the time."""
    query = _COMPARE.replace("{stale}", _STALE if text else "NULL::bigint")
    row = conn.execute(query, {"c": collection}).fetchone()
    assert row is not None
    chunks, stale, *rest = row
    return Check(collection, int(chunks), None if stale is None else int(stale), *(int(v) for v in rest))


def snapshot(conn: psycopg.Connection) -> None:
    """Start the read-only REPEATABLE READ transaction `verify` compares in (conn not in autocommit)."""
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")


def repair(conn: psycopg.Connection, collection: str) -> int:
    """Rebuild `collection`'s index rows from document_chunk in one transaction; returns its chunk count.

    Under ragfr_bm25_writer_lock(), which every trigger that changes the index takes before anything else:
    text writes wait until the rebuild commits, and the rebuild's statements see every write committed
    before it got the lock. Chunks whose fts or fts_len do not match their text (a forged write) are
    re-analysed first; their triggers' changes to the collection's rows are then thrown away with the rest.
    `conn` belongs to the schema owner (or a superuser) and is in autocommit mode (the transaction is its own)."""
    params = {"c": collection}
    with conn.transaction():
        conn.execute("SELECT ragfr_bm25_writer_lock()")
        for statement in _DELETE:
            conn.execute(statement, params)
        # The re-analysis fires the update triggers on the emptied rows: increments are inserted, decrements
        # meet no row; the second delete drops whatever they wrote.
        stale = conn.execute(
            "UPDATE document_chunk d SET fts = a.v, fts_len = ragfr_tsvector_token_count(a.v)"
            "  FROM (SELECT r.id, x.v FROM document_chunk r"
            "        CROSS JOIN LATERAL (SELECT ragfr_to_tsvector(r.text) AS v OFFSET 0) x"  # analysed once
            "         WHERE r.collection_name = %(c)s) a"
            " WHERE d.id = a.id"
            "   AND (d.fts IS DISTINCT FROM a.v OR d.fts_len IS DISTINCT FROM ragfr_tsvector_token_count(a.v))",
            params).rowcount
        if stale:
            for statement in _DELETE:
                conn.execute(statement, params)
        for statement in _REBUILD:
            conn.execute(statement, params)
        row = conn.execute("SELECT count(*) FROM document_chunk WHERE collection_name = %(c)s", params).fetchone()
    assert row is not None
    return int(row[0])


def remove_orphan_docs(conn: psycopg.Connection) -> int:
    """Delete the docnos of chunks that no longer exist; returns how many. Run after repairing every
    collection: a block that still named one would then point at no chunk."""
    with conn.transaction():
        conn.execute("SELECT ragfr_bm25_writer_lock()")
        return conn.execute(
            "DELETE FROM ragfr_lex_docs m WHERE NOT EXISTS (SELECT 1 FROM document_chunk d WHERE d.id = m.chunk_id)"
        ).rowcount


__all__ = ["Check", "collections", "known", "orphan_docs", "remove_orphan_docs", "repair", "snapshot", "verify"]
