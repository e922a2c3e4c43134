"""EXPLAIN ANALYZE of the statements the real retrieval code runs, without copying its SQL.

`ExplainingConnection` stands in for the psycopg connection handed to `ragfr.retrieval.hybrid.search`:
before each arm statement it runs the same statement, with the same parameters, under
`EXPLAIN (ANALYZE, BUFFERS)` and keeps the plan; then it runs the statement itself, so the search
returns exactly what it would have. Diagnostic only (every arm runs twice): never used for timings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

# Query vectors appear inlined in plans as thousands of digits: shortened so plans stay readable.
_LONG_LITERAL = re.compile(r"'([\[{])[-0-9.,e ]{200,}([\]}])'")
# Bookkeeping statements of a search (settings, space, collection size, fetching the hits), by their start.
_SKIP = ("SELECT set_config", "SELECT current_setting", "SELECT coalesce(sum(n_docs), 0) FROM",
         "SELECT id, text, vmetadata, collection_name FROM")


def shorten(line: str) -> str:
    return _LONG_LITERAL.sub(r"'\1...\2'", line)


@dataclass
class Plan:
    statement: str  # first line of the SQL, to tell the arms apart
    plan: list[str]

    @property
    def execution_ms(self) -> float | None:
        for line in reversed(self.plan):
            if line.startswith("Execution Time:"):
                return float(line.split()[2])
        return None


@dataclass
class ExplainingConnection:
    conn: psycopg.Connection[Any]
    plans: list[Plan] = field(default_factory=list)

    def transaction(self) -> Any:
        return self.conn.transaction()

    def execute(self, query: Any, params: Sequence[Any] | None = None, **kwargs: Any) -> Any:
        text = query.as_string(self.conn) if isinstance(query, sql.Composable) else str(query)
        start = text.lstrip()
        if start.upper().startswith(("SELECT", "WITH")) and not start.startswith(_SKIP):
            prefix = "EXPLAIN (ANALYZE, BUFFERS) "
            explained = sql.SQL(prefix) + query if isinstance(query, sql.Composable) else prefix + text
            with self.conn.transaction(force_rollback=True):
                rows = self.conn.execute(explained, params).fetchall()
            first = next((line.strip() for line in text.strip().splitlines() if line.strip()), "")
            self.plans.append(Plan(first[:120], [shorten(str(r[0])) for r in rows]))
        return self.conn.execute(query, params, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def explain_search(dsn: str, query: str, vector: list[float], config: Any) -> list[dict[str, Any]]:
    """Plans of every arm statement of one real `hybrid.search` call."""
    from ragfr.retrieval import hybrid
    from ragfr_tools.bench.corpus import COLLECTION

    with psycopg.connect(dsn, autocommit=True) as conn:
        proxy = ExplainingConnection(conn)
        hybrid.search(proxy, query, collections=[COLLECTION], query_vector=vector, config=config)  # type: ignore[arg-type]
    return [{"statement": p.statement, "execution_ms": p.execution_ms, "plan": p.plan} for p in proxy.plans]


def explain_owui(dsn: str, query: str, vector: list[float], limit: int) -> list[dict[str, Any]]:
    """Plans of Open WebUI's two native statements (reproduced in ragfr_tools.bench.owui) for the same query."""
    from ragfr_tools.bench import owui
    from ragfr_tools.bench.corpus import COLLECTION

    out: list[dict[str, Any]] = []
    with psycopg.connect(dsn) as conn:
        conn.execute(owui.ITERATIVE_SCAN)
        vec = sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + sql.SQL(owui.VECTOR_SQL).format(dims=sql.Literal(len(vector)))
        plan = [shorten(str(r[0])) for r in conn.execute(vec, (vector, COLLECTION, limit)).fetchall()]
        conn.rollback()
        out.append({"statement": "Open WebUI vector arm (LATERAL, relaxed_order)", "plan": plan})
        kw = "EXPLAIN (ANALYZE, BUFFERS) " + owui.KEYWORD_SQL
        plan = [shorten(str(r[0])) for r in conn.execute(kw, {"query": query, "collection_name": COLLECTION,
                                                     "limit": limit}).fetchall()]
        conn.rollback()
        out.append({"statement": "Open WebUI keyword arm (plainto_tsquery 'simple', ts_rank_cd)", "plan": plan})
    for item in out:
        item["execution_ms"] = Plan(str(item["statement"]), list(item["plan"])).execution_ms
    return out
