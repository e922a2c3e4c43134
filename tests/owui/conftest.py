"""Fixtures for the Open WebUI tests: the REAL open-webui 0.12.4 in .venv-owui, pristine or patched.

The tests themselves run in the project venv; Open WebUI's code runs in subprocesses with .venv-owui's
Python, because its pinned dependencies cannot share one environment with ragfr's dev tools. The
patched copy is laid out like the pod: the patched package first on PYTHONPATH, then ragfr (src/) and
the extra packages of the owui-init image (.venv-owui/ragfr-site).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.support.paths import REPO

from ragfr_tools import pgdb

if TYPE_CHECKING:
    from .stack import Server

OWUI_VENV = Path(os.environ.get("RAGFR_OWUI_VENV", REPO / ".venv-owui"))
OWUI_PYTHON = OWUI_VENV / "bin" / "python"
RAGFR_SITE = OWUI_VENV / "ragfr-site"
APPLY = REPO / "patches" / "open-webui" / "apply"
MANIFEST = REPO / "patches" / "open-webui" / "manifest.json"
PROBE = REPO / "tests" / "support" / "owui_probe.py"
PATCHED_FILES = (
    "open_webui/retrieval/vector/dbs/pgvector.py",
    "open_webui/retrieval/utils.py",
    "open_webui/utils/middleware.py",
    "open_webui/main.py",
)

Probe = Callable[..., list[dict[str, Any]]]


def require_owui_venv() -> None:
    if not OWUI_PYTHON.exists():
        pytest.skip(f"{OWUI_VENV} is missing: run `make owui-venv` (scripts/setup-owui.sh); `make test` does it")


@pytest.fixture(scope="session")
def owui_site_packages() -> Path:
    require_owui_venv()
    out = subprocess.run(
        [str(OWUI_PYTHON), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    )
    site = Path(out.stdout.strip())
    assert (site / "open_webui").is_dir(), f"open_webui is not installed in {site}"
    return site


def copy_owui_tree(site: Path, dest: Path) -> Path:
    """A private copy of the installed package (without its 241 MB frontend build), plus its dist-info."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(site / "open_webui", dest / "open_webui", ignore=shutil.ignore_patterns("frontend", "__pycache__"))
    for info in site.glob("open_webui-*.dist-info"):
        shutil.copytree(info, dest / info.name)
    return dest


def run_apply(target: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(APPLY), "--target", str(target), *extra], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="session")
def patched_tree(owui_site_packages: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_owui_tree(owui_site_packages, tmp_path_factory.mktemp("owui-patched"))
    done = run_apply(root)
    assert done.returncode == 0, done.stderr
    return root


def owui_env(
    *, tmp: Path, site: Path, dsn: str, dims: int, patched_root: Path | None, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """Environment of an Open WebUI process: pgvector with our schema's HNSW settings, offline, private dirs."""
    data = tmp / "owui-data"
    (data / "static").mkdir(parents=True, exist_ok=True)
    path = [str(patched_root)] if patched_root else []
    path += [str(REPO / "src"), str(RAGFR_SITE)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(
        PYTHONPATH=os.pathsep.join(path),
        FROM_INIT_PY="true",  # as `open-webui serve` sets it: version from the dist-info
        DATA_DIR=str(data),
        STATIC_DIR=str(data / "static"),
        FRONTEND_BUILD_DIR=str(site / "open_webui" / "frontend"),
        WEBUI_SECRET_KEY="ragfr-test-secret-not-for-production",
        VECTOR_DB="pgvector",
        PGVECTOR_DB_URL=dsn,
        PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH=str(dims),
        PGVECTOR_INDEX_METHOD="hnsw",
        PGVECTOR_HNSW_M="16",
        PGVECTOR_HNSW_EF_CONSTRUCTION="64",
        OFFLINE_MODE="true",
        HF_HUB_OFFLINE="1",
        ENABLE_OPENAI_API="false",
        SCARF_NO_ANALYTICS="true",
        DO_NOT_TRACK="true",
        ANONYMIZED_TELEMETRY="false",
    )
    env.update(extra or {})
    return env


@pytest.fixture
def run_probe(owui_site_packages: Path, tmp_path: Path) -> Probe:
    def run(scenario: dict[str, Any], *, dsn: str, dims: int, patched_root: Path | None) -> list[dict[str, Any]]:
        name = "patched" if patched_root else "pristine"
        scenario_path, result_path = tmp_path / f"{name}-scenario.json", tmp_path / f"{name}-result.json"
        scenario_path.write_text(json.dumps(scenario), encoding="utf-8")
        env = owui_env(tmp=tmp_path / name, site=owui_site_packages, dsn=dsn, dims=dims, patched_root=patched_root)
        done = subprocess.run(
            [str(OWUI_PYTHON), str(PROBE), str(scenario_path), str(result_path)],
            env=env, capture_output=True, text=True, timeout=600, check=False,
        )
        assert done.returncode == 0 and result_path.exists(), f"probe failed:\n{done.stderr[-4000:]}"
        out = json.loads(result_path.read_text(encoding="utf-8"))
        expected_root = patched_root or owui_site_packages
        assert out["pgvector_module"].startswith(str(expected_root)), out["pgvector_module"]
        results: list[dict[str, Any]] = out["results"]
        return results

    return run


@contextmanager
def running_stack(site: Path, patched: Path, pg_dsn: str, tmp: Path,
                  extra_env: dict[str, str] | None = None) -> Iterator[Server]:
    """The Ollama-API test double + one patched Open WebUI server (settings of `make up`, tests/owui/stack.py,
    plus `extra_env`, see start_open_webui) on its own freshly migrated e5 database; everything stopped and
    dropped afterwards."""
    from ragfr.vector_index.upgrade import migrate

    from .stack import E5_SPACE, start_double, start_open_webui, stop

    with pgdb.fresh_database(pg_dsn, "ragfr_chat") as dsn:
        migrate(dsn, 384, E5_SPACE)
        double = start_double(tmp)
        try:
            server = start_open_webui(tmp, site, patched, dsn, double, extra_env=extra_env)
            try:
                yield server
            finally:
                stop(server.proc)
                print(server.log.read_text(errors="replace")[-3000:])
        finally:
            stop(double.proc)


@pytest.fixture(scope="session")
def owui_server(
    owui_site_packages: Path, patched_tree: Path, pg_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """ONE server for the API tests of the session (Open WebUI takes ~30 s to start on two cores)."""
    with running_stack(owui_site_packages, patched_tree, pg_dsn, tmp_path_factory.mktemp("owui-server")) as server:
        yield server


@pytest.fixture(scope="session")
def admin_token(owui_server: Server) -> str:
    from .stack import sign_up_admin

    return sign_up_admin(owui_server)
