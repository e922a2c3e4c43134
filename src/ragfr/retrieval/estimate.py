"""The planner's estimate of how many rows pass the hard filters: what both arms' cost rules decide on.

Counting the passing rows would mean reading each one (random heap reads, as costly as the work the count
is meant to avoid), so the arms plan one statement instead: `EXPLAIN`, no row read.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg import sql

from ragfr.filters.predicate import Filters


def passing_rows(conn: psycopg.Connection[Any], filters: Filters) -> int | None:
    """The planner's estimate of the rows passing `filters`, or None when it could only guess (ranges,
    array or object values: see Filters.estimable)."""
    estimable = filters.estimable("d")
    if estimable is None:
        return None
    predicate, params = estimable
    row = conn.execute(
        sql.SQL("EXPLAIN (FORMAT JSON) SELECT 1 FROM document_chunk d WHERE {}").format(predicate), params,
        prepare=False,
    ).fetchone()
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    return int(plan[0]["Plan"]["Plan Rows"])
