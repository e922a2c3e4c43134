"""Where the checkout is: the one place repository tools locate it and the shared datasets beside it."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
PIAF_JSON = SHARED / "datasets" / "piaf" / "piaf-v1.1.json"
OWUI_VENV = REPO / ".venv-owui"
