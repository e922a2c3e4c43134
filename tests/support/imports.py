"""The import graph of a package, read with `ast` (nothing is imported), and its cycles.

Edges are module -> module for every `import` and `from ... import` anywhere in the file, function-level
imports included: a cycle hidden inside a function is still a cycle of responsibilities. `from pkg import
name` points at `pkg.name` when that is a module, else at `pkg`. The implicit import of a parent package
is not an edge: Python initialises parents first, and counting it would make every package that re-exports
its children look cyclic.
"""

from __future__ import annotations

import ast
from pathlib import Path


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package rooted at `root` (a directory holding __init__.py)."""
    return {module_name(root, p): p for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}


def _resolve(base: str, level: int, current: str, is_package: bool) -> str:
    if level == 0:
        return base
    parts = current.split(".")
    anchor = parts if is_package else parts[:-1]
    anchor = anchor[: len(anchor) - (level - 1)]
    return ".".join([*anchor, base] if base else anchor)


def graph(root: Path) -> dict[str, set[str]]:
    mods = modules(root)
    top = root.name
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node.module or "", node.level, name, path.name == "__init__.py")
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in mods else base)
            for target in targets:
                if target != name and (target == top or target.startswith(top + ".")):
                    while target not in mods and "." in target:
                        target = target.rsplit(".", 1)[0]
                    if target in mods and target != name:
                        edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)
