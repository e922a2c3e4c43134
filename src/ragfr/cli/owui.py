"""`ragfr owui check`: is Open WebUI's French retrieval patch active here, and which version?"""

from __future__ import annotations

import argparse

from ragfr.owui.patcher.check import EPILOG, add_check_arguments, run_check


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "owui",
        help="Open WebUI integration: `ragfr owui check` reports whether the French patch is active",
        description="Open WebUI integration commands.",
    )
    owui_sub = p.add_subparsers(dest="owui_command", metavar="SUBCOMMAND", required=True)
    c = owui_sub.add_parser(
        "check",
        help="report whether the French retrieval patch is active and which version (exit 0 / 1)",
        description="Report whether Open WebUI's retrieval files carry an intact ragfr patch.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_check_arguments(c)
    c.set_defaults(func=run_check)
