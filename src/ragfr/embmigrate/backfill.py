"""Re-embedding stored chunk text into one space's column, batch by batch, each batch a checkpoint.

A batch's vectors and the progress counter are written in ONE transaction, and a row is only ever written
while its column is NULL: after a `kill -9` anywhere, the committed batches are done (and never written
again), the interrupted one left no trace, and a re-run picks up exactly the rows still NULL.

A row whose text changed between our read and our write is not written (the UPDATE re-checks the text it
embedded); the guard trigger has already cleared its vector, so a later pass embeds the new text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import psycopg
from psycopg import sql

from ragfr import stop
from ragfr.embed.errors import EmbedderError
from ragfr.embmigrate import names, state
from ragfr.embmigrate.faults import kill_point
from ragfr.progress import DEFAULT_EVERY, Progress

# Rows embedded between two progress updates: a batch (the unit of commit) of 64 rows takes ~9 s with e5
# on 2 cores, too coarse for a rate and an ETA; the model call is split, the transaction is not.
PROGRESS_STEP = 8


class PassageEmbedder(Protocol):
    model_id: str

    @property
    def dims(self) -> int: ...

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]: ...


@dataclass(frozen=True)
class Slot:
    """The column pair one space lives in while the other is live."""

    vector: str
    model: str
    counter: str  # progress column in the state table
    label: str  # kill-point prefix and progress-bar label


NEXT = Slot(names.VECTOR_NEXT, names.MODEL_NEXT, "rows_embedded", "backfill")
PREV = Slot(names.VECTOR_PREV, names.MODEL_PREV, "rows_reembedded_old", "rollback")

# Rows with no text have nothing to embed; they are reported by verification, never guessed at.
_EMBEDDABLE = sql.SQL("text IS NOT NULL AND text <> ''")


def vector_literal(vector: Sequence[float]) -> str:
    # repr() of a float32 value held in a Python float is exact, and pgvector's strtof reads it back
    # to the same float32: the stored vector is bit-for-bit what the model returned.
    return "[" + ",".join(map(repr, vector)) + "]"


def pending(conn: psycopg.Connection, slot: Slot) -> int:
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM {t} WHERE {v} IS NULL AND {ok}").format(
            t=sql.Identifier(names.TABLE), v=sql.Identifier(slot.vector), ok=_EMBEDDABLE
        )
    ).fetchone()
    return int(row[0]) if row else 0


def fill(
    conn: psycopg.Connection,
    migration_id: int,
    slot: Slot,
    embedder: PassageEmbedder,
    dims: int,
    batch: int,
    *,
    progress: bool = True,
    progress_every: int = DEFAULT_EVERY,
    stoppable: bool = True,
) -> int:
    """Embed every embeddable row whose `slot` column is NULL; return the number of rows written.

    Passes walk the primary key in order (index range scans, no re-reading of done rows within a pass);
    a new pass starts while the previous one wrote something, to catch rows changed behind the cursor.
    `stoppable`: after each commit, honour a stop request (stop.Stopped); False inside a caller's
    transaction, where stopping would discard the caller's work.
    """
    written = 0
    select = sql.SQL(
        "SELECT id, text FROM {t} WHERE {v} IS NULL AND {ok} AND (%s::text IS NULL OR id > %s) ORDER BY id LIMIT %s"
    ).format(t=sql.Identifier(names.TABLE), v=sql.Identifier(slot.vector), ok=_EMBEDDABLE)
    update = sql.SQL(
        "UPDATE {t} AS d SET {v} = u.vec::vector, {m} = %s"
        "  FROM unnest(%s::text[], %s::text[], %s::text[]) AS u(id, vec, txt)"
        " WHERE d.id = u.id AND d.text = u.txt AND d.{v} IS NULL"
    ).format(t=sql.Identifier(names.TABLE), v=sql.Identifier(slot.vector), m=sql.Identifier(slot.model))
    todo = pending(conn, slot)
    with Progress(todo, f"{slot.label} {embedder.model_id}", enabled=progress, every=progress_every) as bar:
        while True:
            wrote_this_pass = 0
            cursor: str | None = None
            while True:
                rows = conn.execute(select, (cursor, cursor, batch)).fetchall()
                if not rows:
                    break
                ids = [str(r[0]) for r in rows]
                texts = [str(r[1]) for r in rows]
                vectors: list[list[float]] = []
                for start in range(0, len(texts), PROGRESS_STEP):
                    vectors += embedder.embed_passages(texts[start : start + PROGRESS_STEP])
                    bar.update(len(texts[start : start + PROGRESS_STEP]))
                literals = []
                for v in vectors:
                    if len(v) != dims:
                        raise EmbedderError(f"{embedder.model_id} returned a {len(v)}-dim vector, expected {dims}")
                    literals.append(vector_literal(v))
                with conn.transaction():
                    kill_point(f"{slot.label}-before-write")
                    n = conn.execute(update, (embedder.model_id, ids, literals, texts)).rowcount
                    state.add_progress(conn, migration_id, slot.counter, n)
                    kill_point(f"{slot.label}-before-commit")
                kill_point(f"{slot.label}-after-commit")
                written += n
                wrote_this_pass += n
                cursor = ids[-1]
                bar.grow(bar.n)  # rows arrived during the pass
                if stoppable:
                    stop.checkpoint()
            if wrote_this_pass == 0:
                return written
