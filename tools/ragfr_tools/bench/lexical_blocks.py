"""The lexical arm before and after migrations/0010, on the same rows: results, latency, bytes.

`--before` is a bench corpus database still on the row-per-posting table (ragfr_postings, migrations
0006); `--after` is the same database with 0010 applied (block postings). Every bench question is asked of
both, alternately, on one connection each: the row-per-posting arm (its SQL as it shipped before 0010,
below), and lexical.bm25 as it ships now. The answers must be identical (ids and order, scores to 1e-9;
chunks within 1e-9 of each other are a tie and compared as a set) and equal to the tsvector scoring
(scan.bm25_filter_first). Latency is wall time around the arm's call, round trips included.

    python -m ragfr_tools.bench.lexical_blocks --dsn $DSN --before ragfr_bench_100k_... --after ... \\
        --out docs/bench/lexical-blocks-100k.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from ragfr.analysis.french import query_terms
from ragfr.db.connect import with_database
from ragfr.filters.predicate import Filters
from ragfr.lexical_index import scan
from ragfr.retrieval import lexical
from ragfr.retrieval.config import SearchConfig
from ragfr_tools.bench.corpus import COLLECTION, CorpusSpec, Geometry, read_piaf
from ragfr_tools.bench.output import write_json
from ragfr_tools.bench.queries import make_queries
from ragfr_tools.bench.stats import load_average, machine
from ragfr_tools.bench.store import SPACE_MODEL
from ragfr_tools.repo import PIAF_JSON

DEFAULT_PIAF = PIAF_JSON

# The unfiltered BM25 of src/ragfr/retrieval/lexical.py before migrations/0010 (now ragfr.lexical_index.scan), verbatim.
ROW_POSTINGS_BM25 = scan._STATS_AND_IDF + """), scored AS MATERIALIZED (
    SELECT p.chunk_id,
           sum(i.idf * (p.tf * (%s + 1)) / (p.tf + %s * (1 - %s + %s * p.fts_len / s.avgdl))) AS score
      FROM idf i
      JOIN ragfr_postings p ON p.lexeme = i.lexeme AND p.collection_name = ANY(%s)
      CROSS JOIN stats s
     GROUP BY p.chunk_id
     ORDER BY score DESC, p.chunk_id
)
SELECT sc.chunk_id, sc.score
  FROM scored sc
 WHERE coalesce((SELECT true FROM document_chunk d WHERE d.id = sc.chunk_id AND {predicate}), false)
 LIMIT %s
"""  # noqa: S608 - composed of constants; values are bound parameters

SIZES = """
SELECT c.relname, pg_total_relation_size(c.oid)
  FROM pg_class c WHERE c.relname IN ('ragfr_postings', 'ragfr_lex_blocks', 'ragfr_lex_docs') AND c.relkind = 'r'
"""


def row_postings_bm25(conn: psycopg.Connection[Any], terms: list[str], filters: Filters,
                      config: SearchConfig) -> list[tuple[str, float]]:
    predicate, pparams = filters.predicate("d")
    colls = list(filters.collections)
    k1, b = config.bm25_k1, config.bm25_b
    query = sql.SQL(ROW_POSTINGS_BM25).format(predicate=predicate)
    params = [colls, terms, colls, k1, k1, b, b, colls, *pparams, config.lexical_depth]
    return [(r[0], float(r[1])) for r in conn.execute(query, params).fetchall()]


def differences(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> str | None:
    """None when equal: same length, scores to 1e-9, same ids in the same order except inside a group of
    scores within 1e-9 of each other (a tie that float summation order may break), compared as a set."""
    if len(got) != len(want):
        return f"{len(got)} results vs {len(want)}"
    for (gi, gs), (wi, ws) in zip(got, want, strict=True):
        if abs(gs - ws) > 1e-9 * max(1.0, abs(ws)):
            return f"score {gi} {gs!r} vs {wi} {ws!r}"
    start = 0
    for i in range(1, len(want) + 1):
        if i == len(want) or abs(want[i][1] - want[i - 1][1]) > 1e-9 * max(1.0, abs(want[i][1])):
            g, w = [x[0] for x in got[start:i]], [x[0] for x in want[start:i]]
            if g != w and sorted(g) != sorted(w):
                return f"ranks {start}-{i}: {g} vs {w}"
            start = i
    return None


def _pct(values: list[float]) -> dict[str, float]:
    a = np.array(values)
    return {"p50": round(float(np.percentile(a, 50)), 2), "p95": round(float(np.percentile(a, 95)), 2),
            "mean": round(float(a.mean()), 2), "max": round(float(a.max()), 2)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    piaf = read_piaf(args.piaf)
    spec = CorpusSpec(rows=args.rows, geometry=Geometry(args.geometry), piaf_sha256=piaf.sha256)
    before_dsn, after_dsn = with_database(args.dsn, args.before), with_database(args.dsn, args.after)
    result: dict[str, Any] = {
        "benchmark": "lexical-blocks", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(), "load_average_start": load_average(),
        "command": "python -m ragfr_tools.bench.lexical_blocks " + " ".join(
            "$DSN" if a == args.dsn else a for a in args.argv),
        "rows": args.rows, "queries": args.queries, "rounds": args.rounds, "depth": args.depth,
    }
    config = SearchConfig(lexical_depth=args.depth)
    filters = Filters(collections=(COLLECTION,), embedding_model=SPACE_MODEL)
    with psycopg.connect(before_dsn, autocommit=True) as old, psycopg.connect(after_dsn, autocommit=True) as new:
        result["bytes"] = {"before": dict(old.execute(SIZES).fetchall()), "after": dict(new.execute(SIZES).fetchall())}
        texts = make_queries(new, spec, piaf, args.queries).texts
        asked = [(t, query_terms(t)) for t in texts]
        asked = [(t, terms) for t, terms in asked if terms]
        mismatches: list[dict[str, str]] = []
        read = total = 0
        for text, terms in asked:  # equality first: every question, both references
            stats: dict[str, int] = {}
            got = scan.bm25_blocks(new, terms, filters, config, stats)
            read += stats.get("postings_read", 0)
            total += stats.get("postings", 0)
            for name, want in (("row postings", row_postings_bm25(old, terms, filters, config)),
                               ("tsvector scoring", scan.bm25_filter_first(new, terms, filters, config))):
                diff = differences(got, want)
                if diff:
                    mismatches.append({"query": text, "reference": name, "difference": diff})
        result["equality"] = {"questions": len(asked), "mismatches": mismatches,
                              "postings_of_query_terms": total, "postings_read": read}
        timings: list[dict[str, Any]] = []
        for r in range(args.rounds):
            ms: dict[str, list[float]] = {"before": [], "after": []}
            for i, (_, terms) in enumerate(asked):
                order = ("before", "after") if (i + r) % 2 == 0 else ("after", "before")
                for side in order:
                    t = time.perf_counter()
                    if side == "before":
                        row_postings_bm25(old, terms, filters, config)
                    else:
                        lexical.bm25(new, terms, filters, config)
                    ms[side].append((time.perf_counter() - t) * 1000)
            timings.append({"round": r + 1, "load_average": load_average(),
                            "before_ms": _pct(ms["before"]), "after_ms": _pct(ms["after"])})
            print(f"round {r + 1}: before {timings[-1]['before_ms']} after {timings[-1]['after_ms']}",
                  file=sys.stderr, flush=True)
        result["latency"] = timings
    result["load_average_end"] = load_average()
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.bench.lexical_blocks", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True, help="server DSN (any database)")
    p.add_argument("--before", required=True, help="database on ragfr_postings (before migrations/0010)")
    p.add_argument("--after", required=True, help="the same rows with migrations/0010 applied")
    p.add_argument("--rows", type=int, default=100_000, help="rows of the bench corpus (for its questions)")
    p.add_argument("--geometry", default="lowrank")
    p.add_argument("--queries", type=int, default=200, help="bench questions (default: 200, the bench's set)")
    p.add_argument("--rounds", type=int, default=2, help="timed passes over the questions")
    p.add_argument("--depth", type=int, default=SearchConfig().lexical_depth)
    p.add_argument("--piaf", type=Path, default=DEFAULT_PIAF)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    result = run(args)
    write_json(args.out, result)
    print(json.dumps({k: result[k] for k in ("bytes", "latency")}, indent=1))
    print(f"equality: {len(result['equality']['mismatches'])} mismatches on {result['equality']['questions']} "
          f"questions; postings read {result['equality']['postings_read']} of "
          f"{result['equality']['postings_of_query_terms']}")
    return 1 if result["equality"]["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
