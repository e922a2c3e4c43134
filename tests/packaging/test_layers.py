"""Imports only point down. The package's layers, lowest first: a module may import from a lower layer or
from its own unit, never from a higher layer nor from another unit of its own layer (so no cycles, and a
newcomer can change a layer knowing only what is below it). Lazy imports inside functions count too
(tests.support.imports reads every import with ast).

Print the graph between units as it is: `python -m tests.packaging.test_layers` (docs/architecture.md, "Layers")."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from tests.support.imports import graph
from tests.support.paths import REPO

PRODUCT = REPO / "src" / "ragfr"
LAYERS: list[set[str]] = [
    {"errors"},  # the error types every layer raises
    {"timing", "progress", "stop", "metrics"},  # leaf helpers: timers, progress lines, signals, counters
    {"analysis", "embed", "filters"},  # French text analysis; embedding models and their cache; the filter grammar
    {"db"},  # the schema, its indexes and locks: SQL on document_chunk and the ragfr tables
    {"lexical_index", "vector_index"},  # the BM25 index; the HNSW index: precision, build, graphs, scan, lock
    {"gate"},  # the evidence gate: its features (computed by retrieval), the rank rule, the fitted decision, the fit
    {"ingest", "retrieval"},  # writing chunks; the hybrid search over them
    {"ask", "embmigrate"},  # the evidence-gated answer; changing the embedding model
    {"eval", "owui"},  # quality measurement; the Open WebUI adapter
    {"cli"},  # the `ragfr` commands
    {"__main__"},  # `python -m ragfr`
]
LEVEL = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}


def unit(module: str) -> str:
    """ragfr.db.connect -> db; ragfr.stop -> stop; ragfr (the package's __init__) -> ''."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def unit_graph(root: Path = PRODUCT) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for source, targets in graph(root).items():
        edges[unit(source)] |= {unit(t) for t in targets} - {unit(source), ""}
    return edges


def upward(edges: dict[str, set[str]]) -> list[str]:
    return [f"ragfr.{u} (layer {LEVEL[u]}) imports ragfr.{t} (layer {LEVEL[t]})"
            for u, ts in sorted(edges.items()) if u for t in sorted(ts) if LEVEL[t] >= LEVEL[u]]


def test_every_unit_has_a_layer() -> None:
    units = {u for u in unit_graph() if u}
    assert units <= set(LEVEL), f"place these in LAYERS: {sorted(units - set(LEVEL))}"


def test_imports_point_down() -> None:
    wrong = upward(unit_graph())
    assert not wrong, "imports that do not point down:\n" + "\n".join(wrong)


def test_the_check_sees_a_lazy_upward_import(tmp_path: Path) -> None:
    pkg = tmp_path / "ragfr"
    for name in ("db", "embmigrate"):
        (pkg / name).mkdir(parents=True)
        (pkg / name / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "embmigrate" / "names.py").write_text("")
    (pkg / "db" / "build.py").write_text("def f() -> None:\n    from ragfr.embmigrate import names\n")
    assert upward(unit_graph(pkg)) == ["ragfr.db (layer 3) imports ragfr.embmigrate (layer 7)"]


def test_the_owui_runtime_never_imports_the_patcher() -> None:
    """ragfr.owui is one unit of the layers, split by lifetime (issue 37): `patcher` (the build and the pod's
    start) may import `runtime` (in Open WebUI's process), never the reverse: Open WebUI loads the runtime and
    needs nothing of the patch engine. Every module sits in one of the two."""
    owui = PRODUCT / "owui"
    assert {p.name for p in owui.iterdir() if p.name != "__pycache__"} == {"__init__.py", "patcher", "runtime"}
    wrong = sorted(f"{source} imports {target}" for source, targets in graph(PRODUCT).items()
                   if source.startswith("ragfr.owui.runtime") for target in targets
                   if target.startswith("ragfr.owui.patcher"))
    assert not wrong, "the Open WebUI runtime imports the patch engine:\n" + "\n".join(wrong)


if __name__ == "__main__":
    for u, targets in sorted(unit_graph().items(), key=lambda kv: (LEVEL.get(kv[0], -1), kv[0])):
        if u:
            print(f"{LEVEL[u]} {u:11} -> {', '.join(sorted(targets, key=lambda t: (LEVEL.get(t, 99), t)))}")
