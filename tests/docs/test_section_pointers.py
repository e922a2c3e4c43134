"""A message, a comment or a page that sends the reader to `docs/PAGE.md, "Section"` names a section that page
has. When install.md's reference half moved to docs/reference/ (issue 48 item 8), eleven such pointers in error
messages, chart comments and runbooks kept naming install.md, where a newcomer found only a link list
(docs/reviews/newcomer-walk-0.2.0.md, item 3)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import REPO

WHERE = ("src", "charts", "scripts", "tools", "docs", "mk", "images", "patches")
SUFFIXES = {".py", ".sh", ".yaml", ".tpl", ".md", ".txt", ".mk", ".json"}
# docs/PAGE.md, "Section" — the quotes as a shell or Go template writes them too (\"...\").
POINTER = re.compile(r"(docs/[\w/.-]+\.md), (?:\\?\"|')([^\"'\\]+)(?:\\?\"|')")
# Reviews quote pointers as they found them; tests hold golden renders of the files checked here.
SKIP = (REPO / "docs" / "reviews",)


def headings(page: Path) -> list[str]:
    return [line.lstrip("#").strip().lower() for line in page.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")]


def pointers() -> list[tuple[str, str, str]]:
    found = []
    for top in WHERE:
        for path in sorted((REPO / top).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file() or any(s in path.parents for s in SKIP):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for m in POINTER.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                # a section's name may run onto the next comment line ("Reach it from\n# the LAN")
                section = re.sub(r"\s*\n\s*(?:#\s*)?", " ", m.group(2))
                found.append((f"{path.relative_to(REPO)}:{line}", m.group(1), section))
    return found


def test_pointers_are_found() -> None:
    # The pattern must keep matching the ways the project writes them, or the test below checks nothing.
    assert len(pointers()) >= 20


def test_every_pointer_names_a_section_of_its_page() -> None:
    wrong = []
    for where, page, section in pointers():
        target = REPO / page
        if not target.is_file():
            wrong.append(f"{where}: {page} does not exist")
        elif not any(section.lower() in h for h in headings(target)):
            wrong.append(f"{where}: {page} has no section \"{section}\"")
    assert not wrong, "\n".join(wrong)
