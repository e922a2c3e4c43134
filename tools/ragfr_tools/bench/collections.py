"""Several knowledge bases in one database, before and after issue 39, side by side in one run: every
collection's search latency (hybrid, and its vector arm alone) and the vector arm's recall@10 against exact
search, first as searches ran before issue 39 (every collection walks the one shared HNSW graph unless the
cost rule scores it exactly), then as shipped (a collection of at most `COLLECTION_EXACT_ROWS` chunks scored
exactly, a larger one on the graph `ragfr filter-index sync` builds for it), with what building those graphs
cost in time, memory and disk.

    python -m ragfr_tools.bench.collections --dsn "$DATABASE_URL" --out docs/bench/collections-100k.json
    python -m ragfr_tools.bench.collections --dsn "$DATABASE_URL" --sizes 1000,4000,9000,16000,70000,300000,600000 \
        --maintenance-work-mem 3GB --keep-database ragfr_bench_collections_1m --out docs/bench/collections-1m.json

Texts are PIAF sentences (so the lexical arm reads French), vectors synthetic low-rank 1024-dim
(ragfr_tools.bench.collection_exact's recipe; no 1024-dim model runs here), queries a PIAF question with a
noisy copy (cosine ~0.8) of a random vector of the searched collection. The hybrid search runs as the Open
WebUI adapter runs it (the lexical arm on a second connection); each case answers different questions than
the warm-up pass, and the phases run one after the other on the same database (the collections' graphs,
once built, are what a search of theirs walks: the two layouts cannot take turns call by call).

Several knowledge bases searched together (a chat with several attached): the groups of `_groups` (every
collection past the limit; every one under it; the smallest with the largest), each asked questions of its
members in turn, recall against the exact top 10 of their union. Before issue 39 such a search walked the
shared graph once for all of them (the cost rule's threshold pinned, which keeps the before phase's single
collections as they were); as shipped, each member is searched alone and the candidates merged.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from ragfr.db.connect import with_database
from ragfr.retrieval.arms import SEMANTIC
from ragfr.retrieval.config import COLLECTION_EXACT_ROWS, SearchConfig
from ragfr.retrieval.hybrid import search
from ragfr.retrieval.semantic import threshold_for
from ragfr.vector_index import graphs as vector_graphs
from ragfr.vector_index.upgrade import migrate
from ragfr_tools import pgdb
from ragfr_tools.bench import pgcopy
from ragfr_tools.bench.collection_exact import DIMS, MODEL, RANK, _vectors
from ragfr_tools.bench.corpus import CorpusSpec, Geometry, chunks, noisy_copy, read_piaf
from ragfr_tools.bench.memory import ClusterMemory
from ragfr_tools.bench.output import say, write_json
from ragfr_tools.bench.stats import load_average, machine, summarize
from ragfr_tools.bench.store import COPY_ROWS
from ragfr_tools.repo import PIAF_JSON

DEFAULT_SIZES = "1000,4000,9000,16000,30000,40000"  # 100k in six knowledge bases, three of them past the limit
BEFORE = "shared graph (before issue 39)"
SHIPPED = "as shipped"


def _copy(conn: psycopg.Connection[Any], name: str, ids: list[str], texts: list[str], vectors: np.ndarray) -> None:
    meta = pgcopy.jsonb(json.dumps({"source": name}))
    label, model = name.encode(), MODEL.encode()
    for start in range(0, len(ids), COPY_ROWS):
        part = slice(start, start + COPY_ROWS)
        with conn.transaction(), conn.cursor() as cur, cur.copy(
                "COPY document_chunk (id, vector, collection_name, text, vmetadata, embedding_model)"
                " FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(pgcopy.HEADER)
            copy.write(b"".join(pgcopy.row(i.encode(), pgcopy.vector(v), label, t.encode(), meta, model)
                                for i, t, v in zip(ids[part], texts[part], vectors[part], strict=True)))
            copy.write(pgcopy.TRAILER)
        if (start + COPY_ROWS) % 100_000 == 0 and start + COPY_ROWS < len(ids):
            say(f"collections: loading {name}: {start + COPY_ROWS} of {len(ids)} rows")


def _generate(sizes: list[int], seed: int) -> tuple[dict[str, np.ndarray], list[str]]:
    """The collections' vectors (`kb<size>`) and texts, the same for the same sizes and seed."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((RANK, DIMS))
    texts = [c.text for c in chunks(CorpusSpec(sum(sizes), geometry=Geometry.LOWRANK, seed=seed),
                                    read_piaf(PIAF_JSON))]
    return {f"kb{n}": _vectors(rng, basis, n) for n in sizes}, texts


def _load(conn: psycopg.Connection[Any], vectors: dict[str, np.ndarray], texts: list[str], seed: int,
          build_memory: str) -> None:
    """Load the collections, then build the shipped vector index over them once."""
    index = conn.execute("SELECT pg_get_indexdef('idx_document_chunk_vector'::regclass)").fetchone()
    assert index is not None
    conn.execute("DROP INDEX idx_document_chunk_vector")  # one build over everything, not one insert at a time
    start = 0
    t = time.perf_counter()
    for name, vs in vectors.items():
        _copy(conn, name, [f"{name}-{i:07d}" for i in range(len(vs))], texts[start:start + len(vs)], vs)
        start += len(vs)
        say(f"collections: loaded {name} ({start} rows, {time.perf_counter() - t:.0f} s)")
    conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (build_memory,))
    t = time.perf_counter()
    conn.execute(index[0])
    conn.execute("VACUUM ANALYZE document_chunk")
    say(f"collections: shared HNSW graph built in {time.perf_counter() - t:.0f} s")
    conn.execute("CREATE TABLE bench_collections_loaded (sizes int[], seed int)")
    conn.execute("INSERT INTO bench_collections_loaded VALUES (%s, %s)",
                 ([len(v) for v in vectors.values()], seed))


def _questions(vectors: np.ndarray, texts: list[str], n: int, seed: int) -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    rows = rng.integers(len(vectors), size=2 * n)  # the first n warm the cache, the last n are measured
    return [(texts[int(rng.integers(len(texts)))], noisy_copy(vectors[r], 0.75, rng)) for r in rows]


def _exact_top(vectors: np.ndarray, ids: list[str], q: np.ndarray, k: int = 10) -> set[str]:
    scores = vectors @ q.astype(np.float32)  # a float64 query would copy the union to float64 (8 GB at 1M)
    return {ids[i] for i in np.argsort(-scores, kind="stable")[:k]}


def _measure(conn: psycopg.Connection[Any], lexical: psycopg.Connection[Any], names: list[str],
             vectors: dict[str, np.ndarray], qs: list[tuple[str, np.ndarray]], config: SearchConfig) -> dict[str, Any]:
    """Latency (hybrid, vector arm) of searching the collections `names` together, and the vector arm's
    recall@10 against the exact top 10 of their union, over the second half of `qs` (the first half warms
    the cache)."""
    ids = [f"{name}-{i:07d}" for name in names for i in range(len(vectors[name]))]
    union = np.vstack([vectors[name] for name in names])
    vector_only = replace(config, lexical=False)
    total: list[float] = []
    arm: list[float] = []
    recall: list[float] = []
    scopes: set[str] = set()
    for turn, (text, q) in enumerate(qs):
        t = time.perf_counter()
        r = search(conn, text, collections=names, query_vector=q.tolist(), config=config, lexical_conn=lexical)
        ms = (time.perf_counter() - t) * 1000
        if turn < len(qs) // 2:
            continue
        total.append(ms)
        arm.append(r.timings_ms[SEMANTIC.name])
        scopes.add(str(r.arms[SEMANTIC.name].scope))
        # Recall from the arm alone (the fused top 10 mixes in the lexical arm's): the same walk or scan.
        alone = search(conn, text, collections=names, query_vector=q.tolist(), config=vector_only)
        recall.append(len({h.id for h in alone.hits} & _exact_top(union, ids, q)) / 10)
    return {"rows": len(ids), "scope": sorted(scopes), "hybrid_ms": summarize(total),
            "vector_arm_ms": summarize(arm), "recall_at_10": round(float(np.mean(recall)), 4),
            "recall_at_10_min": min(recall), "load_average": load_average()}


def _phase(conn: psycopg.Connection[Any], lexical: psycopg.Connection[Any], vectors: dict[str, np.ndarray],
           questions: dict[str, list[tuple[str, np.ndarray]]], config: SearchConfig,
           say_line: Callable[[str], None]) -> list[dict[str, Any]]:
    out = []
    for name in vectors:
        row = {"collection": name, **_measure(conn, lexical, [name], vectors, questions[name], config)}
        say_line(f"collections: {name} {row['scope']}: hybrid p50 {row['hybrid_ms']['p50']} ms, vector arm p50 "
                 f"{row['vector_arm_ms']['p50']} ms, recall@10 {row['recall_at_10']}")
        out.append(row)
    return out


def _groups(sizes: list[int]) -> list[tuple[str, ...]]:
    large = tuple(f"kb{n}" for n in sizes if n > COLLECTION_EXACT_ROWS)
    small = tuple(f"kb{n}" for n in sizes if n <= COLLECTION_EXACT_ROWS)
    both = (f"kb{min(sizes)}", f"kb{max(sizes)}")
    groups = [g for g in (large, small, both) if len(g) > 1 and sum(int(n[2:]) for n in g) > COLLECTION_EXACT_ROWS]
    return list(dict.fromkeys(groups))


def _together(conn: psycopg.Connection[Any], lexical: psycopg.Connection[Any], vectors: dict[str, np.ndarray],
              questions: dict[str, list[tuple[str, np.ndarray]]], config: SearchConfig,
              say_line: Callable[[str], None]) -> list[dict[str, Any]]:
    out = []
    for group in _groups([len(v) for v in vectors.values()]):
        # the members' questions in turn, warm-up half first as in _phase
        qs = [q for pair in zip(*(questions[name] for name in group), strict=False) for q in pair]
        row = {"collections": list(group), **_measure(conn, lexical, list(group), vectors, qs, config)}
        say_line(f"collections: together {'+'.join(group)} {row['scope']}: hybrid p50 {row['hybrid_ms']['p50']} "
                 f"ms, vector arm p50 {row['vector_arm_ms']['p50']} ms, recall@10 {row['recall_at_10']}")
        out.append(row)
    return out


def _graphs(conn: psycopg.Connection[Any], build_memory: str) -> dict[str, Any]:
    """`ragfr filter-index sync` as the chart's CronJob runs it, timed, with the cluster's memory, then the
    size of each graph it built."""
    sampler = ClusterMemory.of(conn)
    if sampler is not None:
        sampler.start()
    stamps: list[tuple[float, str]] = []

    def stamp(line: str) -> None:
        stamps.append((time.perf_counter(), line))
        say(line)

    t = time.perf_counter()
    try:
        report = vector_graphs.sync(conn, maintenance_work_mem=build_memory, say=stamp)
    finally:
        seconds = round(time.perf_counter() - t, 1)
        memory: dict[str, Any] = (sampler.stop() if sampler is not None
                                  else {"measured": "not sampled: the server is not local"})
    built = []
    for name in report.built:
        began = next(s for s, line in stamps if line.startswith(f"building {name} "))
        ended = next(s for s, line in stamps if line.startswith(f"built {name} "))
        size = conn.execute("SELECT pg_relation_size(%s::regclass)", (name,)).fetchone()
        built.append({"index": name, "build_s": round(ended - began, 1), "bytes": int(size[0]) if size else None})
    shared = conn.execute("SELECT pg_relation_size('idx_document_chunk_vector'::regclass)").fetchone()
    return {"sync_s": seconds, "memory": memory, "built": built,
            "shared_graph_bytes": int(shared[0]) if shared else None,
            "collections_declared": report.collections_declared}


def _database(dsn: str, keep: str | None) -> contextlib.AbstractContextManager[str]:
    if keep is None:
        return pgdb.fresh_database(dsn, "ragfr_bench_collections")
    with pgdb.admin(dsn) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (keep,)).fetchone() is not None
    return contextlib.nullcontext(with_database(dsn, keep) if exists else pgdb.create_database(dsn, keep))


def _loaded(conn: psycopg.Connection[Any], sizes: list[int], seed: int) -> bool:
    """A kept database already holds these collections: forget their graphs (the phase before issue 39
    walks the shared graph) and reuse it. One that holds other ones is refused, not silently mixed."""
    if conn.execute("SELECT to_regclass('bench_collections_loaded') IS NULL").fetchone() == (True,):
        if conn.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'document_chunk'").fetchone() != (0,):
            raise SystemExit("collections: the kept database holds a half-loaded corpus: drop it and run again")
        return False
    row = conn.execute("SELECT sizes, seed FROM bench_collections_loaded").fetchone()
    if row is None or (list(row[0]), row[1]) != (sizes, seed):
        raise SystemExit(f"collections: the kept database holds sizes and seed {row}, not {sizes} and {seed}")
    conn.execute("DELETE FROM ragfr_filter_index WHERE on_collection")
    vector_graphs.sync(conn, collection_rows=None, say=say)  # drops the graphs no longer declared
    return True


def run(dsn: str, sizes: list[int], queries: int, seed: int, keep: str | None = None,
        build_memory: str = "1GB") -> dict[str, Any]:
    vectors, texts = _generate(sizes, seed)
    with _database(dsn, keep) as db:
        with psycopg.connect(db, autocommit=True) as conn, psycopg.connect(db, autocommit=True) as lexical:
            if not _loaded(conn, sizes, seed):
                migrate(db, DIMS, MODEL)
                _load(conn, vectors, texts, seed, build_memory)
            questions_text = read_piaf(PIAF_JSON).questions
            questions = {name: _questions(vs, questions_text, queries, seed + i)
                         for i, (name, vs) in enumerate(vectors.items())}
            settings: dict[str, str] = dict(conn.execute(
                "SELECT name, setting FROM pg_settings WHERE name IN"
                " ('shared_buffers', 'work_mem', 'max_parallel_workers_per_gather')").fetchall())
            # Before issue 39: no collection is scored exactly for being one (the cost rule alone decides, its
            # threshold at the whole graph's size pinned: several collections then walk the shared graph once)
            # and none has a graph of its own yet.
            old = SearchConfig(collection_exact_rows=0, rerank=False)
            old = replace(old, exact_threshold=threshold_for(old, sum(sizes)))
            before = _phase(conn, lexical, vectors, questions, old, say)
            before_together = _together(conn, lexical, vectors, questions, old, say)
            graphs = _graphs(conn, build_memory)
            shipped = _phase(conn, lexical, vectors, questions, SearchConfig(rerank=False), say)
            shipped_together = _together(conn, lexical, vectors, questions, SearchConfig(rerank=False), say)
    return {"benchmark": "collections", "dims": DIMS, "model": MODEL, "sizes": sizes, "rows": sum(sizes),
            "queries_per_collection": queries, "seed": seed, "collection_exact_rows": COLLECTION_EXACT_ROWS,
            "collection_graph_rows": vector_graphs.COLLECTION_ROWS, "settings": settings,
            "maintenance_work_mem": build_memory, "machine": machine(),
            "phases": {BEFORE: before, SHIPPED: shipped},
            "together": {BEFORE: before_together, SHIPPED: shipped_together}, "collection_graphs": graphs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dsn", required=True, help="superuser DSN of the cluster (a database is made and dropped)")
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help=f"collection sizes, comma separated ({DEFAULT_SIZES})")
    parser.add_argument("--queries", type=int, default=50, help="measured questions per collection and phase")
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep-database", metavar="NAME",
                        help="load into this database and keep it; a later run with the same NAME and sizes "
                             "skips the load (66 minutes for 1M chunks on a 2-core machine, half of it busy) and "
                             "measures again")
    parser.add_argument("--maintenance-work-mem", default="1GB", metavar="SIZE",
                        help="for the shared graph's build and `ragfr filter-index sync` (1GB; at 1M chunks the "
                             "3GB of charts/ragfr/examples/large-corpus.yaml, or the builds spill to disk)")
    a = parser.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",")]
    if sum(sizes) % 1000:
        parser.error("the sizes must add up to a multiple of 1000 (the text generator's unit)")
    print(write_json(a.out, run(a.dsn, sizes, a.queries, a.seed, a.keep_database,
                                  a.maintenance_work_mem)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
