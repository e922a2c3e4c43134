"""One call of a lexical arm, timed inside a transaction set up as a search sets up its own (one REPEATABLE READ,
READ ONLY snapshot; JIT off): the measure the bench tools that compare arm strategies share."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg

from ragfr.filters.predicate import Filters
from ragfr.retrieval import semantic
from ragfr.retrieval.config import SearchConfig

Ranking = list[tuple[str, float]]
Arm = Callable[[psycopg.Connection[Any], list[str], Filters, SearchConfig], Ranking]


def timed(conn: psycopg.Connection[Any], arm: Arm, terms: list[str], filters: Filters,
          config: SearchConfig) -> tuple[float, Ranking]:
    """(milliseconds, ranking) of `arm(conn, terms, filters, config)`, the transaction's setup not counted."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        conn.execute("SELECT " + semantic.NO_JIT)
        t = time.perf_counter()
        ranking = arm(conn, terms, filters, config)
        return (time.perf_counter() - t) * 1000, ranking
