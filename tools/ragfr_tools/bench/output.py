"""Where every benchmark command puts its raw result, and how it ends: errors as one line, the JSON, the report."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from ragfr.errors import DatabaseError, RagfrError


def write_json(path: Path | None, result: Any) -> str:
    """The result as JSON text, also written to `path` (its folder made) when one is given."""
    text = json.dumps(result, indent=1, ensure_ascii=False)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return text


def say(message: str) -> None:
    """Progress on stderr, flushed (stdout carries the report)."""
    print(message, file=sys.stderr, flush=True)


def finish(tag: str, compute: Callable[[], dict[str, Any]], out: Path | None,
           markdown: Callable[[dict[str, Any]], str], where: str = "") -> int:
    """Run `compute`; a refusal or database error becomes one line on stderr and its exit code. Else write
    the JSON to `out` and print the markdown report. `where`: a redacted DSN for database errors."""
    try:
        result = compute()
    except RagfrError as exc:
        print(f"ragfr {tag}: {exc}", file=sys.stderr)
        return exc.exit_code
    except psycopg.Error as exc:
        message = (str(exc).strip().splitlines() or ["unknown error"])[0]
        print(f"ragfr {tag}: database error{f' ({where})' if where else ''}: {message}", file=sys.stderr)
        return DatabaseError.exit_code
    write_json(out, result)
    if out:
        say(f"{tag}: wrote {out} (wall time {result['wall_s']} s)")
    print(markdown(result), end="")
    return 0
