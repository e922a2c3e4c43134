"""The stored embedding space (`ragfr_embedding_space`, one row: model, dims) and the refusal to mix
spaces: vectors from two models in one column would make every cosine meaningless."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import psycopg

from ragfr import metrics
from ragfr.errors import DatabaseError, EmbeddingSpaceError

RUNBOOK = "docs/runbooks/embedding-migration.md"


class _HasSpace(Protocol):
    model_id: str

    @property
    def dims(self) -> int: ...


@dataclass(frozen=True)
class EmbeddingSpace:
    model: str
    dims: int


def read_space(conn: psycopg.Connection) -> EmbeddingSpace:
    """The database's embedding space; DatabaseError if the schema is missing or the row is absent."""
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT model, dims FROM ragfr_embedding_space")
            rows = cur.fetchall()
    except psycopg.errors.UndefinedTable as exc:
        _rollback_quietly(conn)
        raise DatabaseError(
            "this database has no ragfr schema (table ragfr_embedding_space is missing): run `ragfr migrate`"
        ) from exc
    except psycopg.Error as exc:
        _rollback_quietly(conn)
        raise DatabaseError(f"cannot read the embedding space: {exc}") from exc
    if len(rows) != 1:
        raise DatabaseError(
            f"ragfr_embedding_space must hold exactly one row, found {len(rows)}: run `ragfr migrate`"
        )
    model, dims = rows[0]
    return EmbeddingSpace(model=str(model), dims=int(dims))


def check_space(conn: psycopg.Connection, embedder: _HasSpace) -> EmbeddingSpace:
    """Refuse an embedder whose model or dimension differs from the stored space; return the space."""
    space = read_space(conn)
    if embedder.model_id != space.model or embedder.dims != space.dims:
        metrics.space_mismatch("model")
        raise EmbeddingSpaceError(
            f"embedder {embedder.model_id} ({embedder.dims} dims) does not match the database's "
            f"embedding space {space.model} ({space.dims} dims); use --embedder {space.model}, "
            f"or move the whole collection to the new model as described in {RUNBOOK}"
        )
    return space


def _rollback_quietly(conn: psycopg.Connection) -> None:
    # A failed statement leaves the transaction aborted; the caller's connection must stay usable.
    if not conn.autocommit:
        try:
            conn.rollback()
        except psycopg.Error:
            pass
