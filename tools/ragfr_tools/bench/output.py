"""Where every benchmark command puts its raw result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_json(path: Path | None, result: Any) -> str:
    """The result as JSON text, also written to `path` (its folder made) when one is given."""
    text = json.dumps(result, indent=1, ensure_ascii=False)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return text
