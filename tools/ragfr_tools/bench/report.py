"""Markdown tables from a benchmark JSON (`python -m ragfr_tools.bench.report RESULT.json`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ragfr.retrieval.arms import BUILTIN


def _lat(s: dict[str, Any]) -> str:
    return f"{s['p50']:.1f} / {s['p95']:.1f} / {s['mean']:.1f}" if s.get("n") else "n/a"


def _rows(n: int) -> str:
    return f"{n // 1000}k"


def latency_table(sizes: dict[str, Any]) -> str:
    lines = ["| case | " + " | ".join(f"{_rows(int(n))}: p50 / p95 / mean ms" for n in sizes) + " | returned k of 10 | "
             "underfilled |",
             "|---|" + "---|" * len(sizes) + "---|---|"]
    names = list(next(iter(sizes.values()))["latency"]["cases"])
    for name in names:
        cells = [_lat(s["latency"]["cases"][name]["latency_ms"]) for s in sizes.values()]
        got = " ; ".join(f"{s['latency']['cases'][name]['returned_k']}/{s['latency']['queries']}"
                         for s in sizes.values())
        under = " ; ".join(str(s["latency"]["cases"][name].get("underfilled", "-")) for s in sizes.values())
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {got} | {under} |")
    return "\n".join(lines)


def arms_table(sizes: dict[str, Any]) -> str:
    lines = ["| inside the call | " + " | ".join(f"{_rows(int(n))}: p50 / p95 ms" for n in sizes) + " |",
             "|---|" + "---|" * len(sizes)]
    probes = [*(("ragfr hybrid (no rerank)", f"{arm.name}_arm_ms", f"ragfr hybrid: {arm.description} arm")
                for arm in BUILTIN),
              ("owui native hybrid", "keyword_arm_ms", "Open WebUI native: keyword arm"),
              ("owui native hybrid", "vector_arm_ms", "Open WebUI native: vector arm")]
    for case, key, label in probes:
        cells = []
        for s in sizes.values():
            v = s["latency"]["cases"][case].get(key, {})
            cells.append(f"{v['p50']:.1f} / {v['p95']:.1f}" if v.get("n") else "n/a")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def legacy_table(sizes: dict[str, Any]) -> str:
    lines = ["| size | queries timed | read collection | BM25Okapi build | BM25 query | vector arm | "
             "total p50 / p95 ms |",
             "|---|---|---|---|---|---|---|"]
    for n, s in sizes.items():
        g = s.get("legacy")
        if not g or not g.get("queries_timed"):
            continue
        lines.append(
            f"| {_rows(int(n))} | {g['queries_timed']} (cap {g['cap_queries']} / {g['cap_seconds']:g} s) | "
            f"{g['read_collection_ms']['p50']:.0f} | {g['bm25_build_ms']['p50']:.0f} | "
            f"{g['bm25_query_ms']['p50']:.0f} | "
            f"{g['vector_ms']['p50']:.1f} | {g['total_ms']['p50']:.0f} / {g['total_ms']['p95']:.0f} |"
        )
    return "\n".join(lines)


def _p(entry: dict[str, Any]) -> str:
    return f"{entry['latency_ms']['p50']:.1f} / {entry['latency_ms']['p95']:.1f}"


def recall_table(sizes: dict[str, Any]) -> str:
    lines = ["| size | ef_search | ragfr vector arm recall@10 | arm p50 / p95 ms | arm plan uses HNSW | "
             "arm, HNSW forced: recall@10 | p50 / p95 ms | bare index LIMIT 10 recall@10 | p50 / p95 ms | "
             "exact scan p50 ms |", "|---|---|---|---|---|---|---|---|---|---|"]
    for n, s in sizes.items():
        r = s.get("recall")
        if not r:
            continue
        for ef, arm in r["ragfr_vector_arm"].items():
            bare = r["bare_index_limit_10"][ef]
            forced = r["ragfr_vector_arm_hnsw_forced"][ef]
            lines.append(
                f"| {_rows(int(n))} | {ef} | {arm['recall_at_10']:.3f} | {_p(arm)} | "
                f"{'yes' if arm.get('plan_uses_hnsw') else 'NO (sorts all rows)'} | {forced['recall_at_10']:.3f} | "
                f"{_p(forced)} | {bare['recall_at_10']:.3f} | {_p(bare)} | {r['exact_ms']['p50']:.0f} |"
            )
    return "\n".join(lines)


def lexrank_table(sizes: dict[str, Any]) -> str:
    lines = ["| size | candidates per query p50 / p95 | match only p50 / p95 ms | ts_rank_cd p50 / p95 ms | "
             "BM25 p50 / p95 ms | top-10 overlap |", "|---|---|---|---|---|---|"]
    for n, s in sizes.items():
        x = s.get("lexrank")
        if not x:
            continue
        lat = x["latency_ms"]
        c = x["candidates_per_query"]
        lines.append(
            f"| {_rows(int(n))} | {c['p50']:.0f} / {c['p95']:.0f} | "
            + " | ".join(f"{lat[k]['p50']:.1f} / {lat[k]['p95']:.1f}"
                         for k in ("match only (count)", "ts_rank_cd top depth", "BM25 top depth"))
            + f" | {x['top10_overlap_bm25_vs_ts_rank_cd']} |"
        )
    return "\n".join(lines)


def declared_lines(sizes: dict[str, Any]) -> list[str]:
    """Which filters had their own graph (ragfr filter-index) in each size's run: a filtered figure depends on it."""
    lines = []
    for n, s in sizes.items():
        declared = s.get("filter_indexes") or {}
        indexes = ", ".join(f"{i['filter']} ({i['rows']} rows, {i['bytes'] / 2**20:.0f} MiB, {i['state']})"
                            for i in declared.get("indexes", []) if i.get("rows") is not None and i.get("bytes"))
        lines.append(f"Declared filter indexes at {_rows(int(n))}: {indexes or 'none'}.")
    return lines


def filtered_recall_table(sizes: dict[str, Any]) -> str:
    lines = ["| size | filter | vector arm recall@10 (min) | p50 / p95 ms | strategy | graph |",
             "|---|---|---|---|---|---|"]
    for n, s in sizes.items():
        for name, c in (s.get("filtered_recall") or {}).get("classes", {}).items():
            lines.append(f"| {_rows(int(n))} | sel={name} | {c['recall_at_10']:.3f} ({c['min_recall_at_10']:.1f}) | "
                         f"{c['vector_arm_ms']['p50']:.1f} / {c['vector_arm_ms']['p95']:.1f} | "
                         f"{', '.join(c['strategy'])} | {', '.join(c['graph'])} |")
    return "\n".join(lines)


def throughput_table(sizes: dict[str, Any]) -> str:
    lines = ["| size | clients | ragfr hybrid: searches/s | p50 / p95 ms | Open WebUI native: searches/s | "
             "p50 / p95 ms | errors (ragfr / Open WebUI) |", "|---|---|---|---|---|---|---|"]
    for n, s in sizes.items():
        t = s.get("throughput")
        if not t:
            continue
        for ours, stock in zip(t["ragfr"], t["owui_native"], strict=True):
            lines.append(f"| {_rows(int(n))} | {ours['clients']} | {ours['searches_per_s']} | {_p(ours)} | "
                         f"{stock['searches_per_s']} | {_p(stock)} | {ours['errors']} / {stock['errors']} |")
    return "\n".join(lines)


def markdown(result: dict[str, Any]) -> str:
    """Tables of the sections the run measured (`--skip` leaves some out)."""
    sizes = result["sizes"]
    measured = {key for s in sizes.values() for key in s}
    parts: list[str] = []
    if "latency" in measured:
        state = result.get("cache_state", "not recorded (a run before cache states were recorded: warm)")
        parts += ["### Latency (k = 10)", f"Cache state: {state}.", *declared_lines(sizes), "",
                  latency_table(sizes), "", arms_table(sizes), ""]
    if "throughput" in measured:
        walks = all(s["throughput"]["owui_plan_walks_its_index"] for s in sizes.values() if "throughput" in s)
        parts += ["### Throughput under concurrency (k = 10)",
                  "Open WebUI native walks its full-precision HNSW index on `vector`: "
                  + ("yes (EXPLAIN)." if walks else "NOT at every size (EXPLAIN: the planner chose another plan)."),
                  "", throughput_table(sizes), ""]
    if "legacy" in measured:
        parts += ["### Open WebUI legacy in-memory path (p50 ms per part)", legacy_table(sizes), ""]
    if "recall" in measured:
        parts += ["### HNSW recall@10 vs exact search", recall_table(sizes), ""]
    if "filtered_recall" in measured:
        parts += ["### Filtered recall@10 vs exact search over the passing rows", filtered_recall_table(sizes), ""]
    if "lexrank" in measured:
        parts += ["### Lexical ranking cost (same OR candidates)", lexrank_table(sizes), ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m ragfr_tools.bench.report RESULT.json", file=sys.stderr)
        return 2
    print(markdown(json.loads(Path(args[0]).read_text())), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
