"""What ships is the product: the ragfr package copied into Open WebUI's pods (owui-init image) and the ragfr
wheel hold exactly the product's subpackages, never a repository tool (benchmarks, build helpers, the
Ollama-API test double, calibration drivers)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.support.paths import REPO

# The product, by top-level entry of the ragfr package. A new subpackage is added here on purpose, in the
# same commit, after asking whether it runs in production.
ALLOWED = {
    "__init__.py", "__main__.py", "errors.py", "ask.py", "timing.py", "metrics.py", "progress.py", "stop.py", "py.typed",
    "migrations",
    "analysis", "cli", "db", "embed", "embmigrate", "eval", "filters", "gate", "ingest", "lexical_index", "owui", "retrieval",
    "vector_index",
}
# The fitted evidence gate's coefficients of the default embedding model (ragfr.gate.fitted).
SHIPPED_GATE = "gate/models/local_multilingual-e5-small.json"
TOOL_NAMES = {"bench", "build", "devserver", "gate_calibration.py", "owui_native.py", "owui_driver.py", "baselines.py"}


def _entries(tree: set[str]) -> set[str]:
    return {p.split("/", 1)[0] for p in tree}


def _paths_below(directory: Path) -> set[str]:
    return {p.relative_to(directory).as_posix() for p in directory.rglob("*") if "__pycache__" not in p.parts}


def test_owui_init_context_holds_only_the_product(late_setup: None) -> None:
    # late_setup: under `make test`, the late setup's images.sh assembles the same .build/owui-init-context meanwhile
    # (build.sh empties it first): both at once would each see, or break, the other's half-made folder.
    done = subprocess.run(["bash", str(REPO / "images" / "owui-init" / "build.sh"), "--context-only"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    shipped = _paths_below(Path(done.stdout.strip().splitlines()[-1]) / "ragfr")
    assert _entries(shipped) <= ALLOWED, sorted(_entries(shipped) - ALLOWED)
    assert not {Path(p).name for p in shipped} & TOOL_NAMES
    assert "owui/runtime/native.py" in shipped and "retrieval/hybrid.py" in shipped  # the product is really there
    assert SHIPPED_GATE in shipped  # the chat's fitted evidence gate, as `ragfr ask`'s


def test_wheel_holds_only_the_product(tmp_path: Path) -> None:
    # Built from a copy: setuptools leaves a build/ directory in whatever tree it builds.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    # src/ragfr/owui/patcher/patch links to patches/open-webui: the wheel ships the patch's manifest and bodies.
    for name in ("src", "migrations", "patches"):
        shutil.copytree(REPO / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(source)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("ragfr-*.whl")
    names = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("ragfr/")}
    inside = {n.removeprefix("ragfr/") for n in names}
    assert _entries(inside) <= ALLOWED, sorted(_entries(inside) - ALLOWED)
    assert not {Path(p).name for p in inside} & TOOL_NAMES
    assert not any(n.startswith("ragfr_tools") for n in zipfile.ZipFile(wheel).namelist())
    assert SHIPPED_GATE in inside  # package data: without it `ragfr ask` falls back to the rank rule
    # `ragfr owui check` from an installed wheel reads the patch it verifies against (ragfr.owui.patcher.manifest).
    patch = REPO / "patches" / "open-webui"
    assert {f"owui/patcher/patch/{p.relative_to(patch).as_posix()}" for p in [patch / "manifest.json",
            *(patch / "bodies").glob("*.in")]} <= inside
    # `ragfr migrate` from an installed wheel needs the SQL files (src/ragfr/migrations links to them).
    shipped_sql = {Path(n).name for n in inside if n.startswith("migrations/") and n.endswith(".sql")}
    assert shipped_sql == {p.name for p in (REPO / "migrations").glob("*.sql")}
