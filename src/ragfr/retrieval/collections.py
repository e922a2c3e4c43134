"""Whether the collections a search names exist: a name nobody ever stored is a typo, not an empty answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ragfr.errors import ConfigError

_SHOWN = 10


def require_collections(conn: psycopg.Connection[Any], names: Sequence[str]) -> None:
    """ConfigError naming every collection without a single stored chunk (and some that exist)."""
    missing = [
        name
        for name in dict.fromkeys(names)
        if conn.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM document_chunk WHERE collection_name = %s)", (name,)
        ).fetchone()
        == (True,)
    ]
    if not missing:
        return
    known = [
        str(r[0])
        for r in conn.execute(
            "SELECT collection_name FROM ragfr_collection_stats WHERE n_docs > 0 ORDER BY collection_name LIMIT %s",
            (_SHOWN + 1,),
        )
    ]
    listed = ", ".join(known[:_SHOWN]) + (", ..." if len(known) > _SHOWN else "") if known else "none"
    raise ConfigError(
        f"unknown collection{'s' if len(missing) > 1 else ''} {', '.join(repr(m) for m in missing)}: "
        f"no chunk is stored under {'these names' if len(missing) > 1 else 'that name'} (collections: {listed})"
    )
