"""The migration's row in `ragfr_embedding_migration`: which spaces, which phase, how far.

The phases and the moves between them are ONE table, TRANSITIONS (ragfr.db.phases, read from here as
`state.Phase`, `state.OPEN_PHASES`...); set_phase refuses any move it does not list. Each change is committed
together with the work it records.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from ragfr.db.phases import BEFORE_SWITCH as BEFORE_SWITCH
from ragfr.db.phases import OPEN_MIGRATION
from ragfr.db.phases import OPEN_PHASES as OPEN_PHASES
from ragfr.db.phases import PHASES as PHASES
from ragfr.db.phases import TRANSITIONS as TRANSITIONS
from ragfr.db.phases import Phase as Phase
from ragfr.embmigrate import names
from ragfr.embmigrate.errors import MigrationStateError

# Columns a move to the phase stamps with now().
_STAMPS: dict[Phase, str] = {Phase.READY: "verified_at", Phase.SWITCHED: "switched_at",
                             Phase.ROLLED_BACK: "finished_at", Phase.FINALIZED: "finished_at"}


def parse_phase(value: str) -> Phase:
    """A phase read from the database; anything else means the table was edited by hand or by a newer ragfr."""
    try:
        return Phase(value)
    except ValueError:
        raise MigrationStateError(
            f"unknown migration phase {value!r} in {names.STATE_TABLE} (known: {', '.join(PHASES)})"
        ) from None


@dataclass(frozen=True)
class Migration:
    id: int
    from_model: str
    from_dims: int
    to_model: str
    to_dims: int
    phase: Phase
    rows_embedded: int
    rows_reembedded_old: int
    batches: int
    recall_at_10: float | None
    recall_sample: int | None
    verified_at: datetime | None
    started_at: datetime
    updated_at: datetime
    switched_at: datetime | None
    finished_at: datetime | None

    def __post_init__(self) -> None:
        # Rows come from the database as text: every reader then compares and matches against Phase members.
        object.__setattr__(self, "phase", parse_phase(self.phase))

    def as_dict(self) -> dict[str, Any]:
        return {k: (v.isoformat() if isinstance(v, datetime) else str(v) if isinstance(v, Phase) else v)
                for k, v in self.__dict__.items()}


_COLUMNS = ", ".join(Migration.__dataclass_fields__)


def open_migration(conn: psycopg.Connection) -> Migration | None:
    """The migration in progress (any phase before finalized/rolled_back), or None."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            f"SELECT {_COLUMNS} FROM {names.STATE_TABLE} WHERE {OPEN_MIGRATION}"  # noqa: S608 - constants only
        )
        row = cur.fetchone()
    return None if row is None else Migration(**row)


def last_migration(conn: psycopg.Connection) -> Migration | None:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(f"SELECT {_COLUMNS} FROM {names.STATE_TABLE} ORDER BY id DESC LIMIT 1")  # noqa: S608
        row = cur.fetchone()
    return None if row is None else Migration(**row)


def create(conn: psycopg.Connection, from_model: str, from_dims: int, to_model: str, to_dims: int) -> int:
    """The next migration number, taken in the transaction that starts the migration: an attempt that rolls
    back (a lock timeout while adding the shadow column) leaves no gap, as a sequence would. The caller
    holds the migration lock, so no other writer competes for the number."""
    row = conn.execute(
        f"INSERT INTO {names.STATE_TABLE} (id, from_model, from_dims, to_model, to_dims, phase)"  # noqa: S608
        f" SELECT coalesce(max(id), 0) + 1, %s, %s, %s, %s, %s FROM {names.STATE_TABLE} RETURNING id",
        (from_model, from_dims, to_model, to_dims, Phase.BACKFILL),
    ).fetchone()
    assert row is not None
    return int(row[0])


def set_phase(conn: psycopg.Connection, migration_id: int, phase: Phase, **extra: Any) -> None:
    """Move to `phase` (plus optional columns, e.g. recall_at_10) in the caller's transaction; a move
    TRANSITIONS does not list raises MigrationStateError and changes nothing."""
    phase = parse_phase(phase)
    sources = [p for p, targets in TRANSITIONS.items() if phase in targets]
    assignments = ["phase = %s", "updated_at = now()"] + [f"{k} = %s" for k in extra if k in _SETTABLE]
    values = [phase] + [v for k, v in extra.items() if k in _SETTABLE]
    if phase in _STAMPS:
        assignments.append(f"{_STAMPS[phase]} = now()")
    moved = conn.execute(
        f"UPDATE {names.STATE_TABLE} SET {', '.join(assignments)} WHERE id = %s AND phase = ANY(%s)"  # noqa: S608
        " RETURNING 1",
        (*values, migration_id, sources),
    ).fetchone()
    if moved is None:
        row = conn.execute(f"SELECT phase FROM {names.STATE_TABLE} WHERE id = %s", (migration_id,)).fetchone()  # noqa: S608
        where = f"phase {row[0]}" if row else "no such migration"
        raise MigrationStateError(f"migration #{migration_id}: cannot move to {phase} from {where}")


_SETTABLE = frozenset({"recall_at_10", "recall_sample"})


# counter -> whether its batches are counted in `batches`: the migration's batches only (its backfill and
# catch-ups). A rollback's re-embedding is reported by rows_reembedded_old alone: counted in, it made
# `status` show more batches for the migration than it ever ran (issue 28 item 5).
_COUNTERS: dict[str, bool] = {"rows_embedded": True, "rows_reembedded_old": False}


def add_progress(conn: psycopg.Connection, migration_id: int, counter: str, rows: int) -> None:
    """Count rows written, in the same transaction as the vectors themselves (the checkpoint)."""
    if counter not in _COUNTERS:
        raise ValueError(counter)
    batches = ", batches = batches + 1" if _COUNTERS[counter] else ""
    conn.execute(
        f"UPDATE {names.STATE_TABLE} SET {counter} = {counter} + %s{batches},"  # noqa: S608
        " updated_at = now() WHERE id = %s",
        (rows, migration_id),
    )
