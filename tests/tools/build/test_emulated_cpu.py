"""Proof by running: our PostgreSQL + pgvector on an emulated CPU without AVX-512.

The postmaster is started directly under `qemu-x86_64 -cpu Skylake-Client` (AVX2, FMA, F16C, no AVX-512;
qemu-user never implements AVX-512, so any EVEX instruction raises SIGILL). Forked backends stay emulated.
Data is kept to 150 rows because emulation is ~300x slower. The negative control runs the upstream-default
`-march=native` build (on a host without AVX-512: an explicit AVX-512 target with 512-bit vectors, see
ragfr_tools.build.flavors.native_optflags) under the same emulation and must die with SIGILL, which proves this
test can fail.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psycopg
import pytest

from ragfr_tools.build.flavors import FlavorBuild
from ragfr_tools.build.pgcluster import Cluster

QEMU = "qemu-x86_64"
OLD_CPU = f"{QEMU} -cpu Skylake-Client"
DIMS = 1024
ROWS = 150
CATEGORIES = 10

pytestmark = pytest.mark.slow


def _lit(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in v) + "]"


def _sigill(cluster: Cluster) -> bool:
    log = cluster.log.read_text(errors="replace")
    return "signal 4" in log or "Illegal instruction" in log


def _wait_for_postmaster_setting(cluster: Cluster, name: str, value: str, attempts: int = 60) -> None:
    """pg_reload_conf() only signals the postmaster. A new backend is forked from it with its settings, so a new
    session that shows `value` proves the postmaster has it."""
    seen = None
    for _ in range(attempts):
        with psycopg.connect(cluster.dsn, autocommit=True) as conn:
            row = conn.execute(f"SHOW {name}").fetchone()
        seen = row[0] if row else None
        if seen == value:
            return
        time.sleep(0.5)
    raise AssertionError(f"the postmaster still has {name} = {seen} after {attempts} new sessions")


def _assert_emulated(cluster: Cluster) -> None:
    pid = int((cluster.state / "data" / "postmaster.pid").read_text().split()[0])
    assert Path(f"/proc/{pid}/exe").resolve().name.startswith("qemu-x86_64"), "postmaster is not emulated"
    assert "Skylake-Client" in Path(f"/proc/{pid}/cmdline").read_bytes().decode()


@pytest.fixture(scope="module")
def qemu() -> str:
    if shutil.which(QEMU) is None:
        pytest.fail(f"{QEMU} not found: run `make setup` (qemu-user from bookworm-backports)")
    return QEMU


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20261130)
    rows = rng.standard_normal((ROWS, DIMS)).astype(np.float32)
    query = rng.standard_normal(DIMS).astype(np.float32)
    return rows, query


def _load(conn: psycopg.Connection, rows: np.ndarray) -> None:
    conn.execute("CREATE EXTENSION vector")
    conn.execute(f"CREATE TABLE items (id int PRIMARY KEY, category int, embedding vector({DIMS}))")
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO items VALUES (%s, %s, %s::vector)",
            [(i, i % CATEGORIES, _lit(v)) for i, v in enumerate(rows)],
        )


def test_our_build_runs_on_a_cpu_without_avx512(
    qemu: str, pgroot: Path, cluster_factory: Callable[..., Cluster], data: tuple[np.ndarray, np.ndarray]
) -> None:
    rows, q = data
    cluster = cluster_factory(pgroot, OLD_CPU)
    _assert_emulated(cluster)
    ql = _lit(q)
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        _load(conn, rows)

        # vector: every distance operator, checked against numpy (float32 accumulation tolerance).
        got = np.array(conn.execute(
            "SELECT embedding <-> %s::vector, embedding <=> %s::vector, embedding <#> %s::vector, "
            "embedding <+> %s::vector FROM items ORDER BY id", (ql, ql, ql, ql),
        ).fetchall())
        norms = np.linalg.norm(rows, axis=1) * np.linalg.norm(q)
        want = np.column_stack([
            np.linalg.norm(rows - q, axis=1), 1 - rows @ q / norms, -(rows @ q), np.abs(rows - q).sum(axis=1),
        ])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)

        # halfvec (F16C/FMA dispatch clones): same operators on half-precision copies.
        got_h = np.array(conn.execute(
            "SELECT embedding::halfvec <-> %s::halfvec, embedding::halfvec <=> %s::halfvec, "
            "embedding::halfvec <#> %s::halfvec, embedding::halfvec <+> %s::halfvec FROM items ORDER BY id",
            (ql, ql, ql, ql),
        ).fetchall())
        rh, qh = rows.astype(np.float16).astype(np.float32), q.astype(np.float16).astype(np.float32)
        want_h = np.column_stack([
            np.linalg.norm(rh - qh, axis=1), 1 - rh @ qh / (np.linalg.norm(rh, axis=1) * np.linalg.norm(qh)),
            -(rh @ qh), np.abs(rh - qh).sum(axis=1),
        ])
        np.testing.assert_allclose(got_h, want_h, rtol=1e-3, atol=1e-2)

        # bit: the functions with CPUID-guarded AVX-512 variants; on this CPU the portable path must run.
        got_b = np.array(conn.execute(
            "SELECT binary_quantize(embedding)::bit(1024) <~> binary_quantize(%s::vector)::bit(1024), "
            "binary_quantize(embedding)::bit(1024) <%%> binary_quantize(%s::vector)::bit(1024) "
            "FROM items ORDER BY id", (ql, ql),
        ).fetchall())
        rb, qb = rows > 0, q > 0
        want_b = np.column_stack([(rb != qb).sum(axis=1), 1 - (rb & qb).sum(axis=1) / (rb | qb).sum(axis=1)])
        np.testing.assert_allclose(got_b, want_b, rtol=1e-6)

        # sparsevec distance on the same data.
        got_s = np.array(conn.execute(
            "SELECT embedding::sparsevec <-> %s::vector::sparsevec FROM items ORDER BY id", (ql,)
        ).fetchall())[:, 0]
        np.testing.assert_allclose(got_s, want[:, 0], rtol=1e-4, atol=1e-3)

        # HNSW build with the production parameters, then an index scan (forced: 150 rows favour seq scan).
        conn.execute(
            "CREATE INDEX idx_items_hnsw ON items USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        conn.execute("SET enable_seqscan = off")
        knn = "SELECT id FROM items ORDER BY embedding <=> %s::vector LIMIT 10"
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + knn, (ql,)).fetchall())
        assert "idx_items_hnsw" in plan, plan
        exact = set(np.argsort(want[:, 1])[:10].tolist())
        assert len(exact & {r[0] for r in conn.execute(knn, (ql,)).fetchall()}) >= 9

        # Filtered search: 10% selective filter; a small ef_search leaves plain HNSW short of 10 rows,
        # the iterative scan keeps going until it has them.
        conn.execute("SET hnsw.ef_search = 10")
        filtered = "SELECT id, category FROM items WHERE category = 3 ORDER BY embedding <=> %s::vector LIMIT 10"
        conn.execute("SET hnsw.iterative_scan = off")
        plain = conn.execute(filtered, (ql,)).fetchall()
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        iterative = conn.execute(filtered, (ql,)).fetchall()
        assert len(plain) < 10
        assert len(iterative) == 10 and {c for _, c in iterative} == {3}

    assert not _sigill(cluster), cluster.log.read_text()[-2000:]
    _assert_emulated(cluster)  # same postmaster, never restarted


def test_negative_control_native_build_dies_with_sigill(
    qemu: str, flavor: Callable[[str], FlavorBuild], cluster_factory: Callable[..., Cluster],
    data: tuple[np.ndarray, np.ndarray],
) -> None:
    rows, q = data
    cluster = cluster_factory(flavor("native").root, OLD_CPU)
    _assert_emulated(cluster)
    # After the crash the postmaster would restart and replay WAL, emulated: slower than the fast shutdown at
    # teardown waits (pg_ctl's 60 s; measured: that server outlived the test by ~50 s). Off, it just exits.
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET restart_after_crash = off")
        conn.execute("SELECT pg_reload_conf()")
    _wait_for_postmaster_setting(cluster, "restart_after_crash", "off")
    with pytest.raises(psycopg.OperationalError), psycopg.connect(cluster.dsn, autocommit=True) as conn:
        _load(conn, rows[:10])
        conn.execute("SELECT embedding <=> %s::vector FROM items", (_lit(q),)).fetchall()
    assert _sigill(cluster), cluster.log.read_text()[-2000:]
