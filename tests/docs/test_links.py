"""Every link between the docs lands: a relative Markdown link names a file that exists and, when it has an
`#anchor`, a heading of that file (GitHub's anchor for it). References written as text in the code and the
chart (`docs/benchmarks.md#current-figures`) are held to the same rule, so rewriting a page (issue 37:
benchmarks.md lost its dated log) fails here with the file and line of every link it would break."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from tests.support.paths import REPO

PAGES = sorted([*(REPO / "docs").rglob("*.md"), REPO / "README.md", *(REPO / "charts" / "ragfr").glob("*.md")])
CODE = sorted([*(REPO / "src" / "ragfr").rglob("*.py"), *(REPO / "tools" / "ragfr_tools").rglob("*.py"),
               *(REPO / "charts" / "ragfr").rglob("*.yaml"), *(REPO / "charts" / "ragfr").rglob("*.tpl")])
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A page named with its anchor in plain text: docs/benchmarks.md#current-figures.
TEXT_REF = re.compile(r"\b(docs/[\w./-]+\.md)#([\w-]+)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (letters, digits, _ and - stay),
    spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    found: list[str] = []
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            base = slug(line.lstrip("#"))
            found.append(f"{base}-{seen[base]}" if base in seen else base)  # a repeated heading gets -1, -2, ...
            seen[base] = seen.get(base, 0) + 1
    return frozenset(found)


def links() -> Iterator[tuple[str, Path, str]]:
    """(where, target file, anchor or "") for every relative link of the pages and text reference of the code."""
    for page in PAGES:
        fenced = False
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            if fenced:
                continue
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue  # http:, https:, mailto:
                path, _, anchor = target.partition("#")
                yield f"{page.relative_to(REPO)}:{n}", (page.parent / path) if path else page, anchor
    for source in CODE:
        for n, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            for path, anchor in TEXT_REF.findall(line):
                yield f"{source.relative_to(REPO)}:{n}", REPO / path, anchor


def test_the_slug_is_githubs() -> None:
    assert slug("A team at once (`make load`)") == "a-team-at-once-make-load"
    assert slug("The gate on PIAF's held-out articles (issue 29)") == "the-gate-on-piafs-held-out-articles-issue-29"
    assert slug("ef_search auto") == "ef_search-auto"


def test_every_link_lands() -> None:
    found = list(links())
    assert len(found) > 100, "the scan found almost no links: is the pattern still right?"
    assert any(anchor for _, _, anchor in found)
    broken = []
    for where, target, anchor in found:
        if not target.exists():
            broken.append(f"{where}: {target.relative_to(REPO) if target.is_relative_to(REPO) else target} does not exist")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target.resolve()):
            broken.append(f"{where}: no heading #{anchor} in {target.resolve().relative_to(REPO)}")
    assert not broken, "links that land nowhere:\n" + "\n".join(broken)
