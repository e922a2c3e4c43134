"""scripts/pg.sh: the private cluster's life cycle, network exposure and authentication."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from ragfr_tools.build.pgcluster import PG_SH, Cluster


def _pg(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(PG_SH), *args], env=cluster.env, capture_output=True, text=True, check=False)


def test_cluster_life_cycle(pgroot: Path, cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(pgroot)
    url = urlsplit(cluster.dsn)
    assert url.hostname == "127.0.0.1" and url.port and url.password
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        assert conn.execute("SHOW listen_addresses").fetchone() == ("127.0.0.1",)
        assert conn.execute("SHOW fsync").fetchone() == ("off",)  # test settings, documented in pg.sh
        conn.execute("CREATE TABLE survives_restart (x int)")
        # Our build, from the private root, not a system package.
        row = conn.execute("SELECT setting FROM pg_settings WHERE name = 'data_directory'").fetchone()
        assert row and row[0].startswith(str(cluster.state))
        conn.execute("CREATE EXTENSION vector")
        assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone() == ("0.8.0",)

    again = _pg(cluster, "start")
    assert again.returncode == 0 and "reusing" in again.stderr
    assert again.stdout.strip().splitlines()[-1] == f"DATABASE_URL={cluster.dsn}"
    assert _pg(cluster, "dsn").stdout.strip() == cluster.dsn

    assert _pg(cluster, "stop").returncode == 0
    assert _pg(cluster, "status").returncode == 3
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(cluster.dsn, connect_timeout=3).close()

    restarted = _pg(cluster, "start")
    assert restarted.returncode == 0, restarted.stderr
    dsn = restarted.stdout.strip().splitlines()[-1].removeprefix("DATABASE_URL=")
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT to_regclass('survives_restart') IS NOT NULL").fetchone() == (True,)


def test_password_is_required(pgroot: Path, cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(pgroot)
    url = urlsplit(cluster.dsn)
    for password in ("", "wrong-password"):
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(
                host="127.0.0.1", port=url.port, user="postgres", password=password, dbname="postgres",
                connect_timeout=5,
            ).close()
    pw = cluster.state / "password"
    assert pw.stat().st_mode & 0o077 == 0, "password file readable by others"


def test_two_clusters_get_different_free_ports(pgroot: Path, cluster_factory: Callable[..., Cluster]) -> None:
    a, b = cluster_factory(pgroot), cluster_factory(pgroot)
    assert urlsplit(a.dsn).port != urlsplit(b.dsn).port
    for c in (a, b):
        with psycopg.connect(c.dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
