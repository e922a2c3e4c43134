"""Command line of the patch check: `ragfr owui check` and `python -m ragfr.owui.patcher.check`.

The second form is the Open WebUI pod's readiness probe: it runs in Open WebUI's interpreter with nothing
but ragfr on the path, so it imports only `ragfr.owui.patcher` (the check itself lives in its `status`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ragfr.errors import RagfrError
from ragfr.owui.patcher.manifest import load
from ragfr.owui.patcher.status import check, locate_open_webui

EPILOG = """\
what it does:
  Reads the patched files Open WebUI imports (it does not import Open WebUI) and verifies the marker the
  patcher wrote in each: patch version, Open WebUI version, and the hash of the text under the marker.
  Exit 0 when every file is patched by this patch for this Open WebUI version, 1 otherwise (pristine,
  modified, tampered, other version or missing), so it can serve as a readiness probe.

examples:
  ragfr owui check                                   # the open_webui on this Python's import path
  ragfr owui check --open-webui-dir /app/backend     # the stock image's backend directory
  python -m ragfr.owui.patcher.check --json          # same, without the full ragfr CLI (readiness probe)
"""


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--open-webui-dir",
        type=Path,
        help="directory holding open_webui/ (default: where this Python imports open_webui from)",
    )
    parser.add_argument(
        "--manifest",
        type=Path,
        help="patch manifest (default: $RAGFR_OWUI_MANIFEST, else the one shipped in ragfr, ragfr/owui/patcher/patch)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run_check(args: argparse.Namespace) -> int:
    manifest = load(args.manifest)
    root = args.open_webui_dir or locate_open_webui()
    report = check(root, manifest)
    if args.json:
        print(json.dumps({
            "active": report.active,
            "patch_version": report.patch_version,
            "open_webui_version": report.owui_version,
            "open_webui_dir": str(report.target),
            "files": [{"path": f.path, "state": f.state, "detail": f.detail} for f in report.files],
        }))
    else:
        for f in report.files:
            print(f"{f.state:12} {f.path}" + (f"  ({f.detail})" if f.detail else ""))
        if report.active:
            print(f"active: ragfr-owui-patch {report.patch_version} for open-webui {report.owui_version} "
                  f"in {report.target}")
        else:
            print(f"NOT active: expected ragfr-owui-patch {report.patch_version} for open-webui "
                  f"{report.owui_version} in {report.target}")
    return 0 if report.active else 1


def main(argv: list[str] | None = None) -> int:
    """`python -m ragfr.owui.patcher.check`: the same as `ragfr owui check`, importing only this package."""
    parser = argparse.ArgumentParser(
        prog="python -m ragfr.owui.patcher.check", description="Report whether the ragfr Open WebUI patch is active.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_check_arguments(parser)
    try:
        return run_check(parser.parse_args(argv))
    except RagfrError as err:
        print(f"ragfr owui check: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
