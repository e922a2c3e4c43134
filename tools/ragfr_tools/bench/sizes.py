"""On-disk size of every relation of a benchmark database: what a node's disk must hold, and what of it
a query may have to read."""

from __future__ import annotations

from typing import Any

import psycopg

# Tables and materialized views with their TOAST table and each index apart; catalogs left out.
_RELATIONS = """
SELECT c.relname,
       CASE c.relkind WHEN 'i' THEN 'index' ELSE 'table' END AS kind,
       CASE WHEN c.relkind = 'i' THEN (SELECT t.relname FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid
                                         WHERE x.indexrelid = c.oid) END AS on_table,
       pg_relation_size(c.oid) AS main_bytes,
       coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) AS toast_bytes
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
   AND c.relkind IN ('r', 'm', 'i')
 ORDER BY pg_relation_size(c.oid) + coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) DESC, c.relname
"""


def relation_sizes(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    rows = conn.execute(_RELATIONS).fetchall()
    db = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    relations = [{"name": r[0], "kind": r[1], "on_table": r[2], "bytes": int(r[3]) + int(r[4]),
                  "main_bytes": int(r[3]), "toast_bytes": int(r[4])} for r in rows if int(r[3]) + int(r[4]) > 0]
    return {"database_bytes": int(db[0]) if db else 0, "relations": relations}


def mib(n: int) -> str:
    if n < 2**20:
        return f"{n / 2**10:,.0f} KiB"
    return f"{n / 2**20:,.0f} MiB" if n < 2**30 else f"{n / 2**30:,.2f} GiB"
