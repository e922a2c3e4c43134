"""Command line of `patches/open-webui/apply`: one line per file, one error line, exit 0 or 2.

Kept apart from the `ragfr` CLI because the init container runs it with nothing but the standard
library, ragfr and the manifest; its log lines are what an operator sees when a pod fails at init.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ragfr.errors import RagfrError
from ragfr.owui.patcher.manifest import load
from ragfr.owui.patcher.patching import apply_patch

PROG = "ragfr-owui-patch"


def build_parser(default_manifest: Path) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="apply",
        description="Patch Open WebUI's retrieval (pgvector native hybrid search, legacy BM25 tokenizer, "
        "vector length check) to call ragfr. Verifies the SHA-256 of each pristine file first; writes all "
        "files or none (temporary file + rename, compiled before it replaces anything).",
        epilog="exit status: 0 patched or already patched; 2 unknown version, modified file or missing "
        "anchor (nothing written).\nexample: patches/open-webui/apply --target /app/backend",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--target",
        required=True,
        type=Path,
        help="directory holding open_webui/ (a venv's site-packages, or /app/backend in the stock image)",
    )
    parser.add_argument(
        "--manifest", type=Path, default=default_manifest, help=f"pinned manifest (default {default_manifest})"
    )
    return parser


def main(argv: Sequence[str], *, default_manifest: Path) -> int:
    args = build_parser(default_manifest).parse_args(argv)
    try:
        manifest = load(args.manifest)
        outcomes = apply_patch(args.target, manifest)
    except RagfrError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return err.exit_code
    for outcome in outcomes:
        print(f"{PROG}: {outcome.state}: {outcome.path} ({outcome.edits} edits)")
    print(f"{PROG}: active: patch {manifest.patch_version} for open-webui {manifest.owui_version} in {args.target}")
    return 0
