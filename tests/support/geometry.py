"""Vectors at chosen cosines to a query: the ONE place a stub embedding is right.

Adversarial filter tests must control the geometry exactly (which rows are nearest, by how much); a real
model cannot promise that. Everything else (PostgreSQL, pgvector's HNSW, ragfr's SQL) is real.
"""

from __future__ import annotations

import json
import math
import random

import psycopg

DIMS = 1024


def query_direction() -> list[float]:
    return [1.0] + [0.0] * (DIMS - 1)


def at_cosine(cos: float, rng: random.Random) -> list[float]:
    """A unit vector whose cosine with query_direction() is exactly `cos` (random elsewhere)."""
    noise = [0.0] + [rng.gauss(0, 1) for _ in range(DIMS - 1)]
    norm = math.sqrt(sum(x * x for x in noise))
    side = math.sqrt(max(0.0, 1 - cos * cos))
    return [cos] + [side * x / norm for x in noise[1:]]


def literal(v: list[float]) -> str:
    return "[" + ",".join(f"{x:.7f}" for x in v) + "]"


def insert(conn: psycopg.Connection, rows: list[tuple[str, list[float], str, str, dict]]) -> None:  # type: ignore[type-arg]
    """rows: (id, vector, collection, text, metadata), in ONE statement (the BM25 triggers run once)."""
    conn.execute(
        "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata)"
        " SELECT i, v::vector, c, t, m::jsonb FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[])"
        " AS x(i, v, c, t, m)",
        (
            [r[0] for r in rows], [literal(r[1]) for r in rows], [r[2] for r in rows], [r[3] for r in rows],
            [json.dumps(r[4]) for r in rows],
        ),
    )
