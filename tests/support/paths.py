"""Where the checkout and the shared datasets are: the one place tests locate them."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
PIAF_JSON = SHARED / "datasets" / "piaf" / "piaf-v1.1.json"
GOLDEN = REPO / "eval" / "golden"
