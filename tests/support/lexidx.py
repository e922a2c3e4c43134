"""Checks of the compact BM25 index (migrations/0010, packed by 0013) against a recount from document_chunk."""

from __future__ import annotations

from typing import Any

import psycopg

BLOCK = 128


def indexed_postings(conn: psycopg.Connection[Any]) -> set[tuple[str, str, str, int, int]]:
    """(collection, lexeme, chunk id, tf, length) of every posting in the blocks."""
    rows = conn.execute(
        "SELECT b.collection_name, b.lexeme, m.chunk_id, u.tf, u.len"
        "  FROM ragfr_lex_blocks b,"
        "       unnest(ragfr_lex_int4s(b.docnos), ragfr_lex_int2s(b.tfs), ragfr_lex_int4s(b.lens)) AS u(d, tf, len)"
        "  LEFT JOIN ragfr_lex_docs m ON m.docno = u.d").fetchall()
    return {(c, lex, i, tf, ln) for c, lex, i, tf, ln in rows}


def recounted_postings(conn: psycopg.Connection[Any]) -> set[tuple[str, str, str, int, int]]:
    rows = conn.execute(
        "SELECT collection_name, u.lexeme, id, cardinality(u.positions), coalesce(fts_len, 0)"
        "  FROM document_chunk, unnest(fts) u").fetchall()
    return set(rows)


def block_problems(conn: psycopg.Connection[Any]) -> list[str]:
    """Broken invariants: sizes, sorted disjoint docno ranges per key, exact bounds, one docno per chunk."""
    problems: list[str] = []
    count = conn.execute(
        "SELECT count(*) FROM (SELECT b.*, ragfr_lex_int4s(b.docnos) AS ds, ragfr_lex_int2s(b.tfs) AS ts,"
        "                             ragfr_lex_int4s(b.lens) AS ls FROM ragfr_lex_blocks b) b"
        " WHERE length(docnos) <> 4 * n OR length(tfs) <> 2 * n OR length(lens) <> 4 * n"
        "   OR n NOT BETWEEN 1 AND %s OR lo <> ds[1] OR hi <> ds[n]"
        "   OR blk > lo OR max_tf <> (SELECT max(v) FROM unnest(ts) v)"
        "   OR min_len <> (SELECT min(v) FROM unnest(ls) v)"
        "   OR ds <> (SELECT array_agg(v ORDER BY v) FROM (SELECT DISTINCT v FROM unnest(ds) v) s)",
        (BLOCK,)).fetchone()
    if count and count[0]:
        problems.append(f"{count[0]} blocks with wrong sizes, order or bounds")
    overlap = conn.execute(
        "SELECT count(*) FROM (SELECT lo, lag(hi) OVER (PARTITION BY collection_name, lexeme ORDER BY blk) AS prev"
        "  FROM ragfr_lex_blocks) s WHERE lo <= prev").fetchone()
    if overlap and overlap[0]:
        problems.append(f"{overlap[0]} blocks overlapping the previous block of their key")
    docs = conn.execute(
        "SELECT (SELECT count(*) FROM ragfr_lex_docs), (SELECT count(*) FROM document_chunk),"
        " (SELECT count(*) FROM document_chunk d LEFT JOIN ragfr_lex_docs m ON m.chunk_id = d.id"
        "   WHERE m.docno IS NULL)").fetchone()
    assert docs is not None
    if docs[0] != docs[1] or docs[2]:
        problems.append(f"ragfr_lex_docs has {docs[0]} rows for {docs[1]} chunks ({docs[2]} chunks without)")
    return problems
