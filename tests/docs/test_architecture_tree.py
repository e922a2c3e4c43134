"""docs/architecture.md matches the tree: every subpackage and module of the product and of the repository
tools is named in its "Where things live" listing, and every name listed there exists (issue 26)."""

from __future__ import annotations

import re

from tests.support.paths import REPO

DOC = REPO / "docs" / "architecture.md"
ROOTS = {"src/ragfr/": REPO / "src" / "ragfr", "tools/ragfr_tools/": REPO / "tools" / "ragfr_tools"}


def listing() -> dict[str, set[str]]:
    """Names each root's block of the listing gives (first column, `a/`, `a.py, b.py`)."""
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index("## Where things live"):]
    block = block[block.index("```") + 3:]
    block = block[:block.index("```")]
    named: dict[str, set[str]] = {root: set() for root in ROOTS}
    current: str | None = None
    for line in block.splitlines():
        if not line.startswith(" "):
            current = next((r for r in ROOTS if line.startswith(r)), None)
            continue
        if current is None or not line.startswith("  ") or line.startswith("   "):
            continue
        first = re.split(r"\s{2,}", line.strip())[0]
        for name in re.split(r",\s*", first.split(" -> ")[0]):
            named[current].add(name.strip().rstrip("/"))
    return named


def tree(root: str) -> set[str]:
    path = ROOTS[root]
    return ({p.name for p in path.iterdir() if p.is_dir() and not p.name.startswith("__")}
            | {p.stem for p in path.glob("*.py") if not p.name.startswith("__")})


def test_every_module_and_subpackage_is_in_the_listing_and_nothing_else() -> None:
    named = listing()
    for root in ROOTS:
        listed = {n.removesuffix(".py") for n in named[root]}
        # A nested entry (owui/patcher/, owui/patcher/patch -> ...) names something that must exist too.
        nested = {n for n in listed if "/" in n}
        gone = sorted(n for n in nested if not (ROOTS[root] / n).exists() and not (ROOTS[root] / f"{n}.py").exists())
        assert not gone, f"{root}: listed but not in the tree: {gone}"
        listed -= nested
        assert tree(root) - listed == set(), f"{root}: not in docs/architecture.md: {sorted(tree(root) - listed)}"
        assert listed - tree(root) == set(), f"{root}: listed but not in the tree: {sorted(listed - tree(root))}"
