"""Markdown tables of a `make bench-scale` result (`python -m ragfr_tools.bench.scale_report RESULT.json`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ragfr.retrieval.arms import BUILTIN
from ragfr_tools.bench.report import declared_lines, filtered_recall_table, recall_table
from ragfr_tools.bench.sizes import mib


def _k(rows: str) -> str:
    n = int(rows)
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k"


def load_table(sizes: dict[str, Any]) -> str:
    lines = ["| size | COPY (triggers included) | index builds: seconds (cluster peak memory) | maintenance_work_mem | "
             "VACUUM ANALYZE |", "|---|---|---|---|---|"]
    for n, s in sizes.items():
        load = s["corpus"]
        t = load["timings"]
        build = load.get("build", {})
        memory = build.get("memory_per_index", {})
        builds = "; ".join(
            f"{k[len('index:'):-2]} {v:g} s" + (f" ({memory[k[len('index:'):-2]]['peak_mib']:,.0f} MiB)"
                                                 if memory.get(k[len("index:"):-2], {}).get("peak_mib") else "")
            for k, v in t.items() if k.startswith("index:") and v >= 1)
        lines.append(f"| {_k(n)} | {t['copy_s']:g} s | {builds} | {build.get('maintenance_work_mem', '?')} | "
                     f"{t['vacuum_analyze_s']:g} s |")
    return "\n".join(lines)


def footprint_table(sizes: dict[str, Any], top: int = 12) -> str:
    names: list[str] = []
    for s in sizes.values():
        for r in s["footprint"]["relations"][:top]:
            if r["name"] not in names:
                names.append(r["name"])
    lines = ["| relation | " + " | ".join(_k(n) for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
    lines.append("| **database** | " + " | ".join(f"**{mib(s['footprint']['database_bytes'])}**"
                                                   for s in sizes.values()) + " |")
    for name in names:
        cells = []
        for s in sizes.values():
            r = next((r for r in s["footprint"]["relations"] if r["name"] == name), None)
            cells.append("-" if r is None else mib(r["bytes"]) + (f" (TOAST {mib(r['toast_bytes'])})"
                                                                     if r["toast_bytes"] > 2**20 else ""))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _pp(summary: dict[str, Any] | None) -> str:
    return f"{summary['p50']:.1f} / {summary['p95']:.1f}" if summary and summary.get("n") else "n/a"


def latency_table(n: str, s: dict[str, Any]) -> str:
    runs = s["runs"]
    if not runs:
        return f"#### {_k(n)} chunks: latency not measured (--skip-latency)"
    columns = [(sb, state) for sb in runs for state in ("cold", "warm")]
    lines = [f"#### {_k(n)} chunks: p50 / p95 ms (k = 10)",
             "| case | " + " | ".join(f"{sb} {state}" for sb, state in columns) + " | returned k (warm) |",
             "|---|" + "---|" * len(columns) + "---|"]
    first = runs[next(iter(runs))]["warm"]
    for case in first["cases"]:
        cells = [_pp(runs[sb][state]["cases"][case]["latency_ms"]) for sb, state in columns]
        got = f"{first['cases'][case]['returned_k']}/{first['queries']}"
        lines.append(f"| {case} | " + " | ".join(cells) + f" | {got} |")
    for case, key, label in (("ragfr hybrid (no rerank)", f"{arm.name}_arm_ms", f"inside hybrid: {arm.description} arm")
                             for arm in BUILTIN):
        cells = [_pp(runs[sb][state]["cases"][case].get(key)) for sb, state in columns]
        lines.append(f"| {label} | " + " | ".join(cells) + " | |")
    resident = []
    for sb, r in runs.items():
        ev = r["eviction"]
        if ev.get("resident_after") is not None:
            resident.append(f"{sb}: {mib(ev['resident_after'])} of {mib(ev['bytes'])} resident after eviction")
    if resident:
        lines.append("")
        lines.append("Cold start: " + "; ".join(resident) + ".")
    return "\n".join(lines)


def markdown(result: dict[str, Any]) -> str:
    sizes = result["sizes"]
    parts = ["### Load and index builds", load_table(sizes), "", "### On disk", footprint_table(sizes), "",
             "### Latency, cold and warm", *declared_lines(sizes), ""]
    for n, s in sizes.items():
        parts += [latency_table(n, s), ""]
    if any("recall" in s for s in sizes.values()):
        parts += ["### HNSW recall@10 vs exact search (warm)", recall_table(sizes), ""]
    if any("filtered_recall" in s for s in sizes.values()):
        parts += ["### Filtered recall@10 vs exact search over the passing rows", filtered_recall_table(sizes), ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m ragfr_tools.bench.scale_report RESULT.json", file=sys.stderr)
        return 2
    print(markdown(json.loads(Path(args[0]).read_text())), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
