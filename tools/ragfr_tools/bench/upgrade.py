"""Bring a cached benchmark database to the current schema the way an operator's database gets there: `ragfr
migrate` on the loaded rows. Then it is cached under the current schema's name, so `make bench` and `make
bench-scale` reuse it instead of loading it again (1M chunks: a 45 min COPY and a 21 min HNSW build).

    python -m ragfr_tools.bench.upgrade --dsn postgresql://.../postgres ragfr_bench_1000k_lowr_adc33a80cfa6

The migrations' wall time is added to the database's recorded load (`load.upgrades`), which the reports
carry: the load figures stay those of the original load, under the schema it had.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime

import psycopg

from ragfr.db.connect import with_database
from ragfr.vector_index.upgrade import migrate
from ragfr_tools.bench.corpus import CorpusSpec, Geometry
from ragfr_tools.bench.output import say
from ragfr_tools.bench.store import SPACE_MODEL, corpus_key, database_name


def upgrade(admin_dsn: str, name: str) -> str:
    """Migrate database `name`, re-key its meta row and rename it; returns the new name."""
    dsn = with_database(admin_dsn, name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT key, spec, load FROM ragfr_bench_meta").fetchone()
    if row is None:
        raise SystemExit(f"{name}: no ragfr_bench_meta row (its load never finished); nothing to upgrade")
    old_key, spec_json, load = row
    spec = CorpusSpec(**{**spec_json, "geometry": Geometry(spec_json["geometry"])})
    started = time.perf_counter()
    report = migrate(dsn, spec.dims, SPACE_MODEL, say=say)
    seconds = round(time.perf_counter() - started, 1)
    key, new_name = corpus_key(spec), database_name(spec)
    if key == old_key:
        say(f"{name} already has the current schema")
        return name
    load.setdefault("upgrades", []).append({"from_key": old_key, "applied": report.applied, "seconds": seconds,
                                            "at": datetime.now(UTC).isoformat(timespec="seconds")})
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE ragfr_bench_meta SET key = %s, load = %s", (key, json.dumps(load)))
    with psycopg.connect(with_database(admin_dsn, "postgres"), autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" RENAME TO "{new_name}"')
    say(f"{name} -> {new_name}: applied {', '.join(report.applied) or 'nothing'} in {seconds} s")
    return new_name


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.bench.upgrade", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True, help="the benchmark cluster, any database (it connects to each by name)")
    p.add_argument("database", nargs="+", help="cached benchmark database(s) to upgrade, e.g. ragfr_bench_100k_...")
    args = p.parse_args(argv)
    for name in args.database:
        upgrade(args.dsn, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
