"""`migrate --dry-run`: every check of a real run, then the steps it would take with measured sizes and a
time estimate from embedding a sample of the stored chunks; nothing is written."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psycopg
from psycopg import sql

from ragfr.embed import parse_spec
from ragfr.embed.space import read_space
from ragfr.embmigrate import backfill, catalog, names, state
from ragfr.embmigrate.options import MigrateOptions, check_options
from ragfr.embmigrate.preflight import open_elsewhere, preflight
from ragfr.embmigrate.session import CMD, open_connection
from ragfr.embmigrate.state import Phase
from ragfr.embmigrate.target import load_target
from ragfr.errors import RagfrError
from ragfr.vector_index import lock as index_lock
from ragfr.vector_index import shape

RATE_SAMPLE = 32
# HNSW element overhead besides the vector: 2*m layer-0 neighbour TIDs (6 bytes) + headers, m=16.
_HNSW_OVERHEAD = 2 * 16 * 6 + 24


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


@dataclass
class Plan:
    lines: list[str]
    refused: bool = False  # a real run would refuse or stop: the dry run exits with DRY_RUN_REFUSED


def plan(opts: MigrateOptions) -> Plan:
    check_options(opts)
    target = parse_spec(opts.to).model_id
    with open_connection(opts.dsn) as conn:
        catalog.require_schema(conn)
        space = read_space(conn)
        current = state.open_migration(conn)
        lines = [f"database embedding space: {space.model} ({space.dims} dims)"]
        if index_lock.is_held(conn):
            lines.append(f"a migration is running now ({index_lock.holder(conn)}): a real run would stop at once; "
                         f"follow it with `{CMD} status`")
            return Plan(lines, refused=True)
        refusal = open_elsewhere(current, target) if current is not None else None
        if refusal:
            return Plan([*lines, f"a real run would refuse: {refusal}"], refused=True)
        if current is None and space.model == target:
            return Plan([*lines, f"already on {target}: nothing to do"])
        if current is not None and current.phase is Phase.SWITCHED:
            return Plan([*lines, f"migration #{current.id} already switched to {target}: nothing to migrate; "
                         f"`{CMD} finalize` drops the old vectors, `{CMD} rollback` returns to {current.from_model}"])
        problems = preflight(conn) if current is None else []
        if problems:
            return Plan([*lines, *(f"a real run would refuse: {p}" for p in problems)], refused=True)
        try:
            embedder, dims = load_target(opts.to, opts.dims, opts.batch)
        except RagfrError as exc:  # an unreachable model server, --dims the model contradicts, ...
            return Plan([*lines, f"a real run would refuse: {exc}"], refused=True)
        if current is not None and current.to_dims != dims:
            return Plan([*lines, f"a real run would refuse: the open migration expects {current.to_dims}-dim "
                         f"vectors from {target}, which now returns {dims}; `{CMD} rollback`, then start again"],
                        refused=True)
        total, _ = catalog.row_counts(conn, names.VECTOR)
        todo = total if current is None else backfill.pending(conn, backfill.NEXT)
        rate = _measured_rate(conn, embedder)
        heap, index_bytes = _sizes(conn)
        live = shape.index(conn, names.INDEX)
        width = 2 if live is not None and live.precision == "halfvec" else 4  # bytes per stored dimension
        index_est = index_bytes * (width * dims + 8 + _HNSW_OVERHEAD) / (width * space.dims + 8 + _HNSW_OVERHEAD)
        eta = todo / rate if rate else float("nan")
        phase = None if current is None else current.phase
        lines += [
            f"target: {target}, {dims} dims (probed), batch {opts.batch}",
            f"open migration: #{current.id}, phase {current.phase}: a real run resumes it"
            if current else "no open migration: a real run starts one",
            f"chunks: {total}, to embed: {todo}",
            f"measured embedding rate on {min(RATE_SAMPLE, total)} stored chunks: {rate:,.1f} chunks/s "
            f"-> backfill about {eta / 60:,.1f} min (derived)",
            f"disk now: table {_mib(heap)}, {names.INDEX} {_mib(index_bytes)}",
        ]
        if current is None:
            lines.append(
                f"disk added (derived): {names.VECTOR_NEXT} ~{_mib(total * (4 * dims + 8))}, "
                f"{names.INDEX_NEXT} ~{_mib(index_est)}, one dead version per row until autovacuum ~{_mib(heap)}"
            )
        lines.append("steps still to do:")
        lines += _steps(phase, todo, dims, target, opts)
        lines.append("nothing was changed (--dry-run)")
        return Plan(lines)


# The dry run's numbered steps: preparing (None: before the migration's row exists), then the phases
# before the switch, in state.TRANSITIONS' order.
_ORDER: tuple[Phase | None, ...] = (None, *state.BEFORE_SWITCH)


def _steps(phase: Phase | None, todo: int, dims: int, target: str, opts: MigrateOptions) -> list[str]:
    """The steps from `phase` on (None: none begun), numbered as in the runbook (1 prepare ... 5 switch)."""
    steps: dict[Phase | None, str] = {
        None: f"add {names.VECTOR_NEXT} vector({dims}), {names.MODEL_NEXT} text and trigger {names.TRIGGER_NEXT}",
        Phase.BACKFILL: f"re-embed {todo} chunk(s) in batches of {opts.batch} (checkpointed per batch)",
        Phase.INDEX: f"CREATE INDEX CONCURRENTLY {names.INDEX_NEXT} (same method/options as {names.INDEX})",
        Phase.VERIFY: f"catch up rows written meanwhile; verify completeness and recall@10 >= {opts.min_recall} "
        f"({opts.recall_sample} queries, ef_search {opts.ef_search})",
        Phase.READY: ("stop before the switch (--no-switch)" if opts.no_switch else
                  f"switch in one transaction: {names.VECTOR}->{names.VECTOR_PREV}, "
                  f"{names.VECTOR_NEXT}->{names.VECTOR}, indexes likewise, space -> {target}; then "
                  f"vmetadata.embedding_config.model -> {target} in committed batches"),
    }
    start = _ORDER.index(phase)
    if phase is Phase.READY:
        start = _ORDER.index(Phase.VERIFY)  # a resumed run checks again before switching
    return [f"  {i + 1}. {steps[name]}" for i, name in enumerate(_ORDER) if i >= start]


def _measured_rate(conn: psycopg.Connection, embedder: backfill.PassageEmbedder) -> float:
    texts = [
        str(r[0])
        for r in conn.execute(
            sql.SQL("SELECT text FROM {} WHERE text <> '' ORDER BY md5(id) LIMIT %s").format(
                sql.Identifier(names.TABLE)
            ),
            (RATE_SAMPLE,),
        )
    ]
    if not texts:
        return 0.0
    start = time.perf_counter()
    embedder.embed_passages(texts)
    return len(texts) / max(time.perf_counter() - start, 1e-9)


def _sizes(conn: psycopg.Connection) -> tuple[int, int]:
    row = conn.execute(
        "SELECT pg_table_size(to_regclass(%s)), pg_relation_size(to_regclass(%s))", (names.TABLE, names.INDEX)
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])
