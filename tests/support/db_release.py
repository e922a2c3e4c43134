"""A release of the chart in external-database mode pointed at the private test cluster, whose two roles have
passwords holding every character that breaks a URL (`@ / ? # % '`, space) or a libpq password file line
(`:` `\\`). The containers' env is the RENDERED one, Secrets and ConfigMaps resolved and $(VAR) expanded as a
kubelet does (ragfr_tools.kubesim.pods), so a test runs the chart's own commands with the chart's own env."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg import sql
from tests.support.chart import render
from tests.support.paths import REPO

from ragfr.db.connect import with_database
from ragfr_tools import pgdb
from ragfr_tools.kubesim import pods as kp

# The password of issue 13, a second one (Open WebUI's role) that differs and adds `:` and `\`, and a third
# for Open WebUI's least-privilege role in ragfr's database (database.ragfr.appUser).
PASSWORDS = {"ragfr": "p@ss/w?rd#50% 'x", "openwebui": "p@ss/w?rd#50% 'x:\\o", "app": "a@:/?#% 'x\\p"}
SECRET = "ext-db-credentials"
VENV_BIN = REPO / ".venv" / "bin"


@dataclass
class Release:
    objects: dict[tuple[str, str], kp.Manifest]
    names: dict[str, str]
    superuser: str

    def pod(self, kind: str, suffix: str) -> kp.Pod:
        (name,) = [n for k, n in self.objects if k == kind and fnmatchcase(n, "*" + suffix)]
        return kp.pod_of(self.objects[(kind, name)], self.objects)

    def container(self, kind: str, suffix: str, container: str) -> kp.Container:
        pod = self.pod(kind, suffix)
        (found,) = [c for c in pod.init_containers + pod.containers if c.name == container]
        return found


def local_env(container: kp.Container, **extra: str) -> dict[str, str]:
    """The container's rendered env, plus what this machine needs to find the programs (PATH) and no
    libpq variable inherited from the test runner."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("PG") and k not in ("DATABASE_URL",)}
    return {**base, "PATH": f"{VENV_BIN}:{os.environ['PATH']}", **dict(container.env), **extra}


def argv(container: kp.Container) -> list[str]:
    """command + args with `ragfr` resolved to this checkout's CLI (the image's entry point)."""
    cmd = [*(container.command or ()), *(container.args or ())]
    return [str(VENV_BIN / "ragfr") if i == 0 and c == "ragfr" else c for i, c in enumerate(cmd)]


@contextmanager
def external_release(pg_dsn: str, *, values: Mapping[str, Any] | None = None) -> Iterator[Release]:
    tag = uuid.uuid4().hex[:8]
    names = {"ragfr": f"pw_ragfr_{tag}", "openwebui": f"pw_owui_{tag}"}
    app_role = f"pw_app_{tag}"
    parts = urlsplit(pg_dsn)
    superuser = with_database(pg_dsn, "postgres")
    with psycopg.connect(superuser, autocommit=True) as conn:
        # What docs/install.md asks of an external database: Open WebUI's role, LOGIN and nothing else.
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(app_role),
                                                                       sql.Literal(PASSWORDS["app"])))
        for db, name in names.items():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(name),
                                                                           sql.Literal(PASSWORDS[db])))
            pgdb.create_database(pg_dsn, name, owner=name)
    # What docs/install.md asks of an external database: the extensions made by a superuser.
    with psycopg.connect(with_database(pg_dsn, names["ragfr"]), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE EXTENSION IF NOT EXISTS unaccent")
    chart_values: dict[str, Any] = {
        "database": {
            "mode": "external",
            "external": {"host": parts.hostname, "port": parts.port, "sslmode": "disable", "existingSecret": SECRET},
            "ragfr": {"name": names["ragfr"], "user": names["ragfr"], "appUser": app_role},
            "openwebui": {"name": names["openwebui"], "user": names["openwebui"]},
        },
        **(values or {}),
    }
    # The Secret the operator creates with kubectl (the chart never renders an existingSecret).
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET},
              "stringData": {"ragfr-password": PASSWORDS["ragfr"], "openwebui-password": PASSWORDS["openwebui"],
                             "ragfr-app-password": PASSWORDS["app"]}}
    try:
        yield Release(kp.index([*render(chart_values), secret]), {**names, "app": app_role}, superuser)
    finally:
        with psycopg.connect(superuser, autocommit=True) as conn:
            for name in names.values():
                pgdb.drop_database(superuser, name, conn)
                conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(app_role)))
