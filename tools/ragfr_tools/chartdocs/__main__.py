"""python -m ragfr_tools.chartdocs [--check]: write (or check) charts/ragfr/README.md."""

from __future__ import annotations

import argparse
import sys

from ragfr_tools.chartdocs import render
from ragfr_tools.repo import REPO

CHART = REPO / "charts" / "ragfr"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.chartdocs", description=__doc__)
    p.add_argument("--check", action="store_true", help="fail if the README differs from the schema")
    args = p.parse_args(argv)
    text, readme = render(CHART), CHART / "README.md"
    if args.check:
        if not readme.exists() or readme.read_text() != text:
            print(f"chartdocs: {readme} is stale: run `make chart-docs`", file=sys.stderr)
            return 1
        print(f"chartdocs: {readme} is up to date")
        return 0
    readme.write_text(text)
    print(f"chartdocs: wrote {readme} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
