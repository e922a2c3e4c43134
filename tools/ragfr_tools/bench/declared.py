"""Declared filters for a benchmark run: exactly the `vmetadata.sel` classes asked for get their own graph.

The cached benchmark databases outlive a run, so the declarations are made to match the request (others
forgotten, their indexes dropped) through the product's own code (ragfr.vector_index.graphs), and the JSON
records what each run had: the classes, each index's rows and bytes, and the time their builds took.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg

from ragfr.vector_index import graphs
from ragfr_tools.bench.corpus import SEL_CLASSES

KEY = "sel"


def declare_exactly(dsn: str, classes: list[str], say: Callable[[str], None],
                    maintenance_work_mem: str = "1GB") -> dict[str, Any]:
    unknown = sorted(set(classes) - set(SEL_CLASSES))
    if unknown:
        raise ValueError(f"unknown selectivity classes {unknown}; known: {sorted(SEL_CLASSES)}")
    with psycopg.connect(dsn, autocommit=True) as conn:
        for d in graphs.listing(conn):
            if d.key != KEY or d.value not in classes:
                graphs.forget(conn, d.key, d.value)
        for name in classes:
            graphs.declare(conn, KEY, name)
        t = time.perf_counter()
        report = graphs.sync(conn, dsn=dsn, maintenance_work_mem=maintenance_work_mem, say=say)
        seconds = time.perf_counter() - t
        return {
            "classes": sorted(classes), "built": report.built, "dropped": report.dropped,
            "build_s": round(seconds, 1) if report.built else None, "maintenance_work_mem": maintenance_work_mem,
            "indexes": [{"filter": f"{d.key}={d.value}", "index": d.index_name, "state": d.state, "rows": d.rows,
                         "bytes": d.bytes} for d in graphs.listing(conn)],
        }
