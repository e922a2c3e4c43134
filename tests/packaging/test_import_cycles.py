"""No import cycle inside the product or the tools, and every product module imports on its own."""

from __future__ import annotations

import importlib
import textwrap
from pathlib import Path

import pytest
from tests.support.imports import cycles, graph, modules
from tests.support.paths import REPO

PRODUCT = REPO / "src" / "ragfr"
TOOLS = REPO / "tools" / "ragfr_tools"


@pytest.mark.parametrize("root", [PRODUCT, TOOLS], ids=["ragfr", "ragfr_tools"])
def test_no_import_cycle(root: Path) -> None:
    assert cycles(graph(root)) == []


def test_the_product_never_imports_the_tools() -> None:
    leaks = {m: sorted(t for t in ts if t.startswith("ragfr_tools")) for m, ts in _all_imports(PRODUCT).items()}
    assert {m: t for m, t in leaks.items() if t} == {}


@pytest.mark.parametrize("name", sorted(m for m in modules(PRODUCT) if not m.endswith("__main__")))
def test_every_product_module_imports_alone(name: str) -> None:
    importlib.import_module(name)


def test_a_cycle_is_found(tmp_path: Path) -> None:
    """The detector itself: a two-module cycle through a function-level import and a relative import."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub import a  # parent re-exports a child: no cycle\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from pkg import b\n")
    (pkg / "b.py").write_text(textwrap.dedent("from .sub import a\n"))
    assert cycles(graph(pkg)) == [["pkg.b", "pkg.sub.a"]]
    (pkg / "b.py").write_text("import os\n")
    assert cycles(graph(pkg)) == []


def _all_imports(root: Path) -> dict[str, set[str]]:
    import ast

    out: dict[str, set[str]] = {}
    for name, path in modules(root).items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
        out[name] = found
    return out
