"""Benchmark of pgvector compiler-flag choices, for docs/decisions/0001-pgvector-build-flags.md.

For each flavor (portable = production, nodispatch, native = upstream default) it starts a private cluster on
that flavor's PostgreSQL root, generates the same random unit vectors server-side (fixed seed), and measures:
HNSW build time (m=16, ef_construction=64, cosine, single-threaded so runs compare), top-10 HNSW query time,
exact (sequential, no parallel workers) top-10 query time, and the scanner's AVX-512 counts. The flavors run
side by side with interleaved measurements (see `run`). Timings are wall-clock on a shared machine: read
them as a comparison made in one sitting, not as absolute numbers.

    python -m ragfr_tools.bench.pgvector_flags --rows 20000 --dims 1024 --out .build/bench/pgvector-flags.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psycopg
from tqdm import tqdm

from ragfr.errors import ConfigError, RagfrError
from ragfr_tools.build.avx512_scan import ScanReport, load_allowlist, scan_file
from ragfr_tools.build.flavors import FlavorBuild, build_flavor, flavors
from ragfr_tools.build.pgcluster import REPO, Cluster, start_cluster, state_base


@dataclass
class FlavorResult:
    flavor: str
    optflags: str
    cppflags: str
    avx512_instructions: int
    avx512_functions: int
    offending_functions: int
    hnsw_build_s: list[float]
    hnsw_build_s_min: float
    hnsw_build_cpu_s: list[float]
    hnsw_build_cpu_s_min: float
    hnsw_query_ms_median: float
    hnsw_query_ms_p95: float
    exact_query_ms_median: float
    index_mb: float


def _generate(conn: psycopg.Connection, rows: int, dims: int, queries: int) -> None:
    conn.execute("CREATE EXTENSION vector")
    conn.execute(f"CREATE TABLE items (id int PRIMARY KEY, embedding vector({dims}))")
    conn.execute(f"CREATE TABLE queries (id int PRIMARY KEY, embedding vector({dims}))")
    # Seeded server-side generation: every flavor gets identical data without shipping 80 MB of text.
    # The `0 * g` reference makes the inner query correlated, so each row gets its own random array.
    conn.execute("SELECT setseed(0.2026)")
    for table, n in (("items", rows), ("queries", queries)):
        conn.execute(
            f"INSERT INTO {table} SELECT g, l2_normalize(array(SELECT random() * 2 - 1 + 0 * g "  # noqa: S608
            f"FROM generate_series(1, {dims}))::vector) FROM generate_series(1, {n}) g"
        )
    conn.execute("VACUUM ANALYZE items")


def _time_queries(conn: psycopg.Connection, ids: range) -> list[float]:
    out = []
    sql = "SELECT id FROM items ORDER BY embedding <=> (SELECT embedding FROM queries WHERE id = %s) LIMIT 10"
    for qid in ids:
        t0 = time.perf_counter()
        conn.execute(sql, (qid,)).fetchall()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _plan(conn: psycopg.Connection) -> str:
    rows = conn.execute(
        "EXPLAIN SELECT id FROM items ORDER BY embedding <=> (SELECT embedding FROM queries WHERE id = 1) LIMIT 10"
    ).fetchall()
    return "\n".join(r[0] for r in rows)


@dataclass
class _Subject:
    """One flavor's running cluster with the benchmark data loaded."""

    name: str
    build: FlavorBuild
    report: ScanReport
    cluster: Cluster
    state: Path
    conn: psycopg.Connection
    builds_s: list[float] = field(default_factory=list)
    builds_cpu_s: list[float] = field(default_factory=list)
    hnsw_ms: list[float] = field(default_factory=list)
    exact_ms: list[float] = field(default_factory=list)


def _backend_cpu_s(conn: psycopg.Connection) -> float:
    """User+system CPU seconds of this connection's backend (same machine): unlike wall time, barely moved
    by other work competing for the cores."""
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    fields = Path(f"/proc/{row[0]}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _open(name: str, rows: int, dims: int, queries: int) -> _Subject:
    build = build_flavor(name)
    report = scan_file(build.vector_so, load_allowlist(REPO / "images/ragdb/avx512-allowlist.txt"))
    base = state_base()
    state = Path(tempfile.mkdtemp(prefix=f"bench-{name}-", dir=base))
    state.chmod(0o755)
    cluster = start_cluster(build.root, state / "pg")
    # No server-side prepared statements: a plan cached before `SET enable_indexscan = off` would be reused
    # and the "exact" timings would silently measure the HNSW index.
    conn = psycopg.connect(cluster.dsn, autocommit=True, prepare_threshold=None)
    _generate(conn, rows, dims, queries)
    conn.execute("SET max_parallel_maintenance_workers = 0")
    conn.execute("SET max_parallel_workers_per_gather = 0")
    conn.execute("SET maintenance_work_mem = '1GB'")
    return _Subject(name, build, report, cluster, state, conn)


def _close(s: _Subject) -> None:
    s.conn.close()
    s.cluster.stop()
    shutil.rmtree(s.state, ignore_errors=True)


def run(names: list[str], rows: int, dims: int, queries: int, builds: int) -> list[FlavorResult]:
    """All flavors' clusters run side by side and every measurement is interleaved across flavors, so load
    from other work on the machine falls on all of them alike; build times are reported as the minimum."""
    subjects: list[_Subject] = []
    try:
        for name in tqdm(names, desc="load data", unit="flavor"):
            subjects.append(_open(name, rows, dims, queries))
        for i in tqdm(range(builds), desc="HNSW builds", unit="round"):
            for s in subjects:
                if i:
                    s.conn.execute("DROP INDEX idx_items_hnsw")
                c0, t0 = _backend_cpu_s(s.conn), time.perf_counter()
                s.conn.execute(
                    "CREATE INDEX idx_items_hnsw ON items USING hnsw (embedding vector_cosine_ops) "
                    "WITH (m = 16, ef_construction = 64)"
                )
                s.builds_s.append(round(time.perf_counter() - t0, 2))
                s.builds_cpu_s.append(round(_backend_cpu_s(s.conn) - c0, 2))
        for s in subjects:
            s.conn.execute("SET enable_seqscan = off")  # small --rows would otherwise get a seq scan
            if "idx_items_hnsw" not in _plan(s.conn):
                raise RagfrError(f"benchmark query did not use the HNSW index:\n{_plan(s.conn)}")
            _time_queries(s.conn, range(1, 3))  # warm-up
        block = 10
        for start in tqdm(range(1, queries + 1, block), desc="HNSW queries", unit="block"):
            for s in subjects:
                s.hnsw_ms += _time_queries(s.conn, range(start, min(start + block, queries + 1)))
        for s in subjects:
            s.conn.execute("SET enable_indexscan = off")
            s.conn.execute("SET enable_seqscan = on")
            if "idx_items_hnsw" in _plan(s.conn):
                raise RagfrError("exact-scan timing would use the HNSW index")
        for qid in tqdm(range(1, min(queries, 20) + 1), desc="exact queries", unit="query"):
            for s in subjects:
                s.exact_ms += _time_queries(s.conn, range(qid, qid + 1))
        return [_result(s) for s in subjects]
    finally:
        for s in subjects:
            _close(s)


def _result(s: _Subject) -> FlavorResult:
    size = s.conn.execute("SELECT pg_relation_size('idx_items_hnsw')").fetchone()
    return FlavorResult(
        flavor=s.name, optflags=s.build.flavor.optflags, cppflags=s.build.flavor.cppflags,
        avx512_instructions=s.report.total, avx512_functions=len(s.report.functions),
        offending_functions=len(s.report.offending), hnsw_build_s=s.builds_s,
        hnsw_build_s_min=min(s.builds_s),
        hnsw_build_cpu_s=s.builds_cpu_s,
        hnsw_build_cpu_s_min=min(s.builds_cpu_s),
        hnsw_query_ms_median=round(statistics.median(s.hnsw_ms), 2),
        hnsw_query_ms_p95=round(sorted(s.hnsw_ms)[int(0.95 * (len(s.hnsw_ms) - 1))], 2),
        exact_query_ms_median=round(statistics.median(s.exact_ms), 1),
        index_mb=round((size[0] if size else 0) / 2**20, 1),
    )


def markdown(results: list[FlavorResult]) -> str:
    lines = [
        "| flavor | OPTFLAGS | PG_CPPFLAGS | AVX-512 instr. (functions, offending) | HNSW build CPU s (min) | "
        "HNSW build wall s (min; all) | "
        "HNSW top-10 ms (median / p95) | exact top-10 ms (median) | index MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.flavor} | `{r.optflags}` | `{r.cppflags}` | {r.avx512_instructions} ({r.avx512_functions}, "
            f"{r.offending_functions}) | {r.hnsw_build_cpu_s_min:.1f} | "
            f"{r.hnsw_build_s_min:.1f}; {' / '.join(f'{t:.1f}' for t in r.hnsw_build_s)} | "
            f"{r.hnsw_query_ms_median} / {r.hnsw_query_ms_p95} | {r.exact_query_ms_median} | {r.index_mb} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    known = list(flavors())
    p = argparse.ArgumentParser(
        prog="python -m ragfr_tools.bench.pgvector_flags",
        description="Compare pgvector builds (compiler flags) on HNSW build/query time and AVX-512 content.",
    )
    p.add_argument("--rows", type=int, default=20000, help="vectors in the table (default 20000)")
    p.add_argument("--dims", type=int, default=1024, help="dimensions (default 1024)")
    p.add_argument("--queries", type=int, default=200, help="timed HNSW queries (default 200; exact: 20)")
    p.add_argument("--builds", type=int, default=2, help="HNSW builds per flavor (default 2)")
    p.add_argument("--flavors", default=",".join(known), help=f"comma-separated subset of {known}")
    p.add_argument("--out", type=Path, default=REPO / ".build/bench/pgvector-flags.json", help="JSON output")
    args = p.parse_args(argv)
    try:
        names = [n for n in args.flavors.split(",") if n]
        bad = [n for n in names if n not in known]
        if bad or not names:
            raise ConfigError(f"unknown flavor(s) {bad}; choose from {known}")
        if min(args.rows, args.dims, args.queries, args.builds) < 1:
            raise ConfigError("--rows, --dims, --queries and --builds must be positive")
        results = run(names, args.rows, args.dims, args.queries, args.builds)
    except RagfrError as exc:
        print(f"bench-flags: {exc}", file=sys.stderr)
        return exc.exit_code
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d"), "rows": args.rows, "dims": args.dims, "queries": args.queries,
            "machine": platform.processor() or platform.machine()}
    args.out.write_text(json.dumps({"meta": meta, "results": [asdict(r) for r in results]}, indent=2))
    print(markdown(results))
    print(f"(written to {args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
