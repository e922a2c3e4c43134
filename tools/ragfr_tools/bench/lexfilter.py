"""Calibration of the lexical arm's cost rule under metadata conditions (ragfr.retrieval.strategy), and the
check that both strategies rank alike, on a loaded corpus database.

    python -m ragfr_tools.bench.lexfilter --dsn postgresql://.../ragfr_bench_100k_lowr_... --out FILE.json

For each `vmetadata.sel` class (0.1 / 1 / 10 %) and unfiltered, --queries PIAF questions (the `make bench`
question draw) are answered by both strategies in one REPEATABLE READ transaction each, with the search's
settings (JIT off):
  filter first  scan.bm25_filter_first: the GIN candidates that pass, scored from their tsvectors;
  block index   scan.bm25_blocks: the block index's top walked through the filter (theta from passing
                chunks, failures probed once).
Both must return the same ids in the same order with scores within 1e-9 (`mismatches`). The rule's terms:
c_row = filter-first ms p50 / passing rows; c_probe = (block-index ms p50 - its unfiltered p50) /
(depth * N / passing), the walk's expected probes; r = c_probe / c_row is `lexical_probe_cost_ratio`.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from ragfr.analysis.french import query_terms
from ragfr.filters.grammar import Condition
from ragfr.filters.predicate import Filters
from ragfr.lexical_index import scan
from ragfr.retrieval import strategy
from ragfr.retrieval.config import SearchConfig
from ragfr_tools.bench.armtime import Ranking, timed
from ragfr_tools.bench.corpus import COLLECTION, SEL_CLASSES, read_piaf
from ragfr_tools.bench.output import finish, say
from ragfr_tools.bench.queries import question_texts
from ragfr_tools.bench.stats import load_average, machine, summarize
from ragfr_tools.bench.store import SPACE_MODEL
from ragfr_tools.repo import PIAF_JSON


def _same(a: Ranking, b: Ranking) -> bool:
    return [x[0] for x in a] == [x[0] for x in b] and all(abs(x[1] - y[1]) <= 1e-9 for x, y in zip(a, b, strict=True))


def run(dsn: str, queries: int, seed: int) -> dict[str, Any]:
    started = time.perf_counter()
    config = SearchConfig()
    piaf = read_piaf(PIAF_JSON)
    asked = [terms for terms in map(query_terms, question_texts(piaf, seed, queries)) if terms]
    out: dict[str, Any] = {"benchmark": "lexical-filter-cost", "date": datetime.now(UTC).isoformat(timespec="seconds"),
                           "machine": machine(), "load_average_start": load_average(),
                           "depth": config.lexical_depth, "queries": len(asked), "classes": {}}
    with psycopg.connect(dsn, autocommit=True) as conn:
        total = int(conn.execute("SELECT count(*) FROM document_chunk").fetchone()[0])  # type: ignore[index]
        out["rows"] = total
        out["threshold"] = strategy.lexical_filter_first_threshold(
            total, config.lexical_depth, config.lexical_probe_cost_ratio)
        cases: list[tuple[str, tuple[Condition, ...]]] = [("unfiltered", ())]
        cases += [(name, (Condition("sel", "eq", (name,)),))
                  for name, _ in sorted(SEL_CLASSES.items(), key=lambda kv: kv[1])]
        for name, conditions in cases:
            say(f"lexfilter: {name}")
            filters = Filters((COLLECTION,), conditions, embedding_model=SPACE_MODEL)
            first: list[float] = []
            blocks: list[float] = []
            mismatches = 0
            for terms in asked:
                t_first, want = timed(conn, scan.bm25_filter_first, terms, filters, config)
                t_blocks, got = timed(conn, scan.bm25_blocks, terms, filters, config)
                first.append(t_first)
                blocks.append(t_blocks)
                mismatches += not _same(got, want)
            passing = int(conn.execute(
                "SELECT count(*) FROM document_chunk WHERE vmetadata ->> 'sel' = %s", (name,)
            ).fetchone()[0]) if conditions else total  # type: ignore[index]
            out["classes"][name] = {"passing": passing, "filter_first_ms": summarize(first),
                                    "block_index_ms": summarize(blocks), "mismatches": mismatches}
    base = out["classes"]["unfiltered"]["block_index_ms"]["p50"]
    for name, c in out["classes"].items():
        if name == "unfiltered":
            continue
        probes = config.lexical_depth * total / c["passing"]
        c_row = c["filter_first_ms"]["p50"] / c["passing"]
        c_probe = max(c["block_index_ms"]["p50"] - base, 0.0) / probes
        c.update(expected_probes=round(probes), c_row_us=round(c_row * 1000, 2), c_probe_us=round(c_probe * 1000, 2),
                 r=round(c_probe / c_row, 1) if c_row else None,
                 cheaper="filter first" if c["filter_first_ms"]["p50"] < c["block_index_ms"]["p50"] else "block index",
                 rule_chooses="filter first" if c["passing"] <= out["threshold"] else "block index")
    out["load_average_end"] = load_average()
    out["wall_s"] = round(time.perf_counter() - started, 1)
    return out


def markdown(result: dict[str, Any]) -> str:
    lines = [f"Lexical arm under a filter, {result['rows']:,} rows, {result['queries']} questions, depth "
             f"{result['depth']}, threshold {result['threshold']:,} passing rows "
             f"(load {result['load_average_start'][0]} -> {result['load_average_end'][0]})", "",
             "| filter | passing rows | filter first p50 / p95 ms | block index p50 / p95 ms | same results "
             "| c_row / c_probe us (r) | cheaper | the rule chooses |", "|---|---|---|---|---|---|---|---|"]
    for name, c in result["classes"].items():
        f, b = c["filter_first_ms"], c["block_index_ms"]
        costs = f"{c['c_row_us']} / {c['c_probe_us']} ({c['r']})" if "r" in c else "-"
        lines.append(f"| {name} | {c['passing']:,} | {f['p50']} / {f['p95']} | {b['p50']} / {b['p95']} | "
                     f"{result['queries'] - c['mismatches']}/{result['queries']} | {costs} | "
                     f"{c.get('cheaper', '-')} | {c.get('rule_chooses', 'block index')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.bench.lexfilter", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True, help="DSN of a loaded ragfr_bench_* corpus database")
    p.add_argument("--queries", type=int, default=100, help="PIAF questions per case (default: 100)")
    p.add_argument("--seed", type=int, default=20261130, help="question draw (default: the bench's)")
    p.add_argument("--out", type=Path, help="write the JSON result here")
    args = p.parse_args(argv)
    return finish("lexfilter", lambda: run(args.dsn, args.queries, args.seed), args.out, markdown)


if __name__ == "__main__":
    sys.exit(main())
