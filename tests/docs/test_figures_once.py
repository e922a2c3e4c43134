"""Each measured figure has one home: the "Current figures" table of docs/benchmarks.md. Other pages, the
chart's comments and the CLI's help link to it (`benchmarks.md#current-figures`) instead of restating its
numbers, so a new measurement changes one line and no copy goes stale (issue 26).

A figure is a decimal number of three digits or more with its unit as the table writes it ("46.6 / 103.1 ms",
"10.71 GiB", "1.68x"); a copy has the same number AND unit ("21.2 s" in the table is not "21.2%" elsewhere, a
rate of another measurement). Bare ratios such as recalls are left out, because other measurements
(retrieval-quality.md) legitimately share their digits, and so are two-digit numbers ("2.5 ms"), too common
to tell a copy from a coincidence."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import REPO

BENCHMARKS = REPO / "docs" / "benchmarks.md"
UNIT = r"(ms|GiB|MiB|s|min|x|%)(?![\w])"
FIGURE = re.compile(rf"(?<![\d.,])(\d+\.\d+)((?:\s*/\s*\d+(?:\.\d+)?)*)\s*{UNIT}")
# Dated records that keep the numbers they were written with (ADRs), and the table's own page.
EXEMPT = {BENCHMARKS, *(REPO / "docs" / "decisions").glob("*.md")}


def numbers_of(m: re.Match[str]) -> set[tuple[str, str]]:
    """The (number, unit) pairs of one match: "19.4 / 40.0 ms" gives both numbers in ms."""
    return {(n, m.group(3)) for n in (m.group(1), *re.findall(r"\d+\.\d+", m.group(2)))}


def current_figures() -> set[tuple[str, str]]:
    text = BENCHMARKS.read_text(encoding="utf-8")
    start = text.index("## Current figures")
    table = text[start:text.index("\n## ", start)]  # up to the next section
    figures: set[tuple[str, str]] = set()
    for line in table.splitlines():
        cells = line.split("|")
        if line.startswith("| ") and len(cells) > 3 and not line.startswith("| figure"):
            for m in FIGURE.finditer(cells[2].replace("**", "")):
                figures.update(numbers_of(m))
    return {f for f in figures if sum(c.isdigit() for c in f[0]) >= 3}


def pages() -> list[Path]:
    found = [*REPO.glob("docs/**/*.md"), REPO / "README.md", *(REPO / "src" / "ragfr").rglob("*.py"),
             *(REPO / "charts" / "ragfr").glob("*.yaml"), *(REPO / "charts" / "ragfr").glob("*.md"),
             *(REPO / "charts" / "ragfr" / "examples").glob("*.yaml"), *(REPO / "charts" / "ragfr" / "files").glob("*")]
    return sorted(p for p in found if p.is_file() and p not in EXEMPT)


def test_the_table_has_figures() -> None:
    assert len(current_figures()) > 20  # the parser still reads the table


def test_no_page_restates_a_current_figure() -> None:
    figures = current_figures()
    copies = []
    for page in pages():
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for m in FIGURE.finditer(line.replace("**", "")):
                if numbers_of(m) & figures:
                    copies.append(f"{page.relative_to(REPO)}:{n}: {m.group(0)}")
    assert not copies, "figures restated outside docs/benchmarks.md#current-figures (link to it instead):\n" + \
        "\n".join(copies)
