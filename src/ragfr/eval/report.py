"""Presenting a run: the side-by-side table, the JSON document, and the per-query file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragfr.eval.metrics import metric_names
from ragfr.eval.runner import EvalRun

SLICED_TAGS = ("stem-match", "inflection", "accent-omitted", "negation", "identifier", "filter")


def to_json(run: EvalRun) -> dict[str, Any]:
    tags = sorted({t for q in run.queries for t in q.tags})
    return {
        "dataset": run.dataset.name,
        "queries": len(run.queries),
        "documents": len(run.dataset.corpus),
        "collection": run.collection,
        "embedder": run.embedder,
        "chunking": {"size": run.chunking.size, "overlap": run.chunking.overlap},
        "ingest": run.ingest,
        "configurations": {name: {k: round(v, 4) for k, v in r.metrics.items()} for name, r in run.results.items()},
        "seconds": {name: round(r.seconds, 2) for name, r in run.results.items()},
        "notes": {name: r.notes for name, r in run.results.items() if r.notes},
        "skipped": run.skipped,
        "slices": {
            tag: {"queries": sum(tag in q.tags for q in run.queries),
                  "configurations": {n: {k: round(v, 4) for k, v in m.items()}
                                     for n, m in run.slice_metrics(tag).items()}}
            for tag in tags
        },
    }


def table(run: EvalRun) -> str:
    names = metric_names()
    head = ["configuration", *names, "s/query"]
    rows = [head]
    for name, result in run.results.items():
        metrics = result.metrics
        per_query = result.seconds / max(len(result.per_query), 1)
        rows.append([name, *(f"{metrics[m]:.3f}" for m in names), f"{per_query:.3f}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]

    def fmt(cells: list[str]) -> str:
        padded = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(padded)

    lines = [
        f"dataset {run.dataset.name}: {len(run.queries)} queries, {len(run.dataset.corpus)} documents, "
        f"{run.ingest['chunks']} chunks; embedder {run.embedder}; collection {run.collection}",
        *(fmt(row) for row in rows),
    ]
    for name, result in run.results.items():
        if result.notes.get("unanswered"):
            lines.append(f"note: {name} returned nothing for {result.notes['unanswered']} queries")
        if result.notes.get("reranker"):
            lines.append(f"note: {name} reranked with {result.notes['reranker']}")
    for name, reason in run.skipped.items():
        lines.append(f"skipped: {name}: {reason}")
    for tag in SLICED_TAGS:
        count = sum(tag in q.tags for q in run.queries)
        if count:
            parts = [f"{n} {m['recall@10']:.3f}" for n, m in run.slice_metrics(tag).items() if m]
            lines.append(f"recall@10 on '{tag}' queries ({count}): " + ", ".join(parts))
    return "\n".join(lines)


def write_per_query(run: EvalRun, path: Path) -> None:
    """One JSON line per (configuration, query): its scores, first relevant rank, top documents and labels,
    so a regression can be traced to the queries that moved."""
    path.parent.mkdir(parents=True, exist_ok=True)
    queries = {q.id: q for q in run.queries}
    with path.open("w", encoding="utf-8") as handle:
        for name, result in run.results.items():
            for scores in result.per_query:
                query = queries[scores.query_id]
                handle.write(json.dumps({
                    "configuration": name,
                    "query_id": query.id,
                    "query": query.text,
                    "filters": dict(query.filters),
                    "tags": list(query.tags),
                    "first_relevant_rank": scores.first_relevant,
                    **{k: round(v, 4) for k, v in scores.values.items()},
                    "top": result.rankings[query.id],
                    "relevant": run.dataset.qrels[query.id],
                }, ensure_ascii=False) + "\n")
