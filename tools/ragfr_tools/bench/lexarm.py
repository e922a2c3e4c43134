"""The unfiltered lexical arm alone (block index, ragfr.lexical_index.scan.bm25_blocks) on a loaded bench corpus:
latency per question, blocks and postings read, and a digest of each answer, so that two runs (two schemas or two
versions of the code on the same rows) can be compared answer by answer.

    python -m ragfr_tools.bench.lexarm --dsn postgresql://.../ragfr_bench_300k_lowr_... --out FILE.json
    python -m ragfr_tools.bench.lexarm --compare A.json B.json

Each question is asked --rounds times in a REPEATABLE READ, READ ONLY transaction with JIT off, as a search
does (the first round warms the cache and is not timed). Only public calls of ragfr.retrieval are used, so the
tool runs against an older checkout too (PYTHONPATH=<old checkout>/src:<this checkout>/tools).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from ragfr.analysis.french import query_terms
from ragfr.filters.predicate import Filters
from ragfr.lexical_index import scan
from ragfr.retrieval.config import SearchConfig
from ragfr_tools.bench.armtime import timed
from ragfr_tools.bench.corpus import COLLECTION, CorpusSpec, read_piaf
from ragfr_tools.bench.output import say, write_json
from ragfr_tools.bench.queries import question_texts
from ragfr_tools.bench.stats import load_average, machine
from ragfr_tools.bench.store import SPACE_MODEL
from ragfr_tools.repo import PIAF_JSON


def _digest(ranking: list[tuple[str, float]]) -> str:
    """Ids in order and scores to 1e-9 (the arm's exactness tolerance)."""
    text = ";".join(f"{i}:{round(s, 9):.9f}" for i, s in ranking)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run(dsn: str, queries: int, rounds: int, seed: int) -> dict[str, Any]:
    config = SearchConfig()
    asked = [t for t in map(query_terms, question_texts(read_piaf(PIAF_JSON), seed, queries)) if t]
    filters = Filters((COLLECTION,), (), embedding_model=SPACE_MODEL)
    out: dict[str, Any] = {"benchmark": "lexical-arm", "date": datetime.now(UTC).isoformat(timespec="seconds"),
                           "machine": machine(), "load_average_start": load_average(), "depth": config.lexical_depth,
                           "rounds": rounds, "questions": []}
    with psycopg.connect(dsn, autocommit=True) as conn:
        out["database"] = conn.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        out["schema"] = [r[0] for r in conn.execute("SELECT name FROM ragfr_schema_migrations ORDER BY version")]
        for n, terms in enumerate(asked):
            times: list[float] = []
            for r in range(rounds):
                stats: dict[str, int] = {}
                ms, ranking = timed(conn, partial(scan.bm25_blocks, stats=stats), terms, filters, config)
                if r:
                    times.append(ms)
            out["questions"].append({"terms": terms, "ms": times, "digest": _digest(ranking), **stats})
            if n % 20 == 19:
                say(f"lexarm: {n + 1}/{len(asked)} questions")
    per_question = np.array([min(q["ms"]) for q in out["questions"]])
    out["best_of_rounds_ms"] = {"p50": round(float(np.percentile(per_question, 50)), 1),
                                "p95": round(float(np.percentile(per_question, 95)), 1),
                                "max": round(float(per_question.max()), 1)}
    out["load_average_end"] = load_average()
    return out


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    same = sum(x["digest"] == y["digest"] for x, y in zip(a["questions"], b["questions"], strict=True))
    return {"questions": len(a["questions"]), "same_answers": same,
            "a": {"database": a["database"], "migrations_only_here": sorted(set(a["schema"]) - set(b["schema"])),
                  **a["best_of_rounds_ms"]},
            "b": {"database": b["database"], "migrations_only_here": sorted(set(b["schema"]) - set(a["schema"])),
                  **b["best_of_rounds_ms"]}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.bench.lexarm", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", help="a loaded bench corpus database")
    p.add_argument("--queries", type=int, default=100, help="bench questions (default: 100, the make bench draw)")
    p.add_argument("--rounds", type=int, default=3, help="askings per question, the first untimed (default: 3)")
    p.add_argument("--seed", type=int, default=CorpusSpec.seed, help="question draw seed (default: %(default)s)")
    p.add_argument("--out", type=Path, help="write the JSON result here")
    p.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="compare two results instead")
    args = p.parse_args(argv)
    if args.compare:
        result = compare(*(json.loads(f.read_text()) for f in args.compare))
    elif args.dsn:
        if args.rounds < 2:
            p.error("--rounds must be at least 2 (the first round is not timed)")
        result = run(args.dsn, args.queries, args.rounds, args.seed)
    else:
        p.error("give --dsn or --compare")
    if args.out:
        write_json(args.out, result)
    print(json.dumps(result if args.compare else {k: v for k, v in result.items() if k != "questions"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
