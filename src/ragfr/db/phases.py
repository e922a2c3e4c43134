"""The embedding migration's phases and the moves between them: ONE table, TRANSITIONS.

It lives here, below `ragfr.embmigrate`, because the database layer must know which migration is open (while
one is, it owns the vector indexes: ragfr.vector_index.build and .graphs) and may import nothing
above it; `ragfr.embmigrate.state` (the phase row) reads it from here. The open phases, the phases before the
switch, the order the dry run lists and the SQL clause naming the open migration are all read from TRANSITIONS:
  backfill  shadow column + guard trigger exist; vectors of the new model are being written
  index     every row had a new vector once; the HNSW index on the shadow column is being built
  verify    index built; catching up rows written meanwhile, then completeness and recall checks
  ready     verified; waiting for the switch (`--no-switch` stops here); a resumed run verifies again
  switched  `vector` IS the new space; the old one is kept as vector_prev
  rolled_back / finalized  terminal: the row stays as history
Migration 0100's CHECK constraint and one-open index list the same names (tests/embmigrate/test_state_table.py).
"""

from __future__ import annotations

import enum

import psycopg

from ragfr.db import names


class Phase(enum.StrEnum):
    """A str: stored, compared and printed as its value, so the database keeps the same seven names."""

    BACKFILL = "backfill"
    INDEX = "index"
    VERIFY = "verify"
    READY = "ready"
    SWITCHED = "switched"
    ROLLED_BACK = "rolled_back"
    FINALIZED = "finalized"


PHASES: tuple[Phase, ...] = tuple(Phase)
# phase -> the phases set_phase may move it to. A phase with no way out is terminal.
TRANSITIONS: dict[Phase, frozenset[Phase]] = {
    Phase.BACKFILL: frozenset({Phase.INDEX, Phase.ROLLED_BACK}),
    Phase.INDEX: frozenset({Phase.VERIFY, Phase.ROLLED_BACK}),
    Phase.VERIFY: frozenset({Phase.READY, Phase.ROLLED_BACK}),
    # ready -> ready: a resumed run verifies again and records the new recall.
    Phase.READY: frozenset({Phase.READY, Phase.SWITCHED, Phase.ROLLED_BACK}),
    Phase.SWITCHED: frozenset({Phase.ROLLED_BACK, Phase.FINALIZED}),
    Phase.ROLLED_BACK: frozenset(),
    Phase.FINALIZED: frozenset(),
}
OPEN_PHASES: tuple[Phase, ...] = tuple(p for p in PHASES if TRANSITIONS[p])
# Before the switch the live `vector` is untouched: rollback only drops the shadow.
BEFORE_SWITCH: tuple[Phase, ...] = tuple(p for p in OPEN_PHASES if p is not Phase.SWITCHED)
# Spelled as the NOT IN of migration 0100's one-open index (`WHERE phase NOT IN ('rolled_back', 'finalized')`):
# the same predicate, so the planner may answer it from that index. The names are the Enum's constants.
OPEN_MIGRATION = "phase NOT IN ({})".format(", ".join(f"'{p.value}'" for p in PHASES if p not in OPEN_PHASES))


def open_migration_id(conn: psycopg.Connection) -> int | None:
    """The number of the open embedding migration, or None. While one is open it owns the vector indexes:
    `ragfr migrate` and `ragfr filter-index sync` leave them as they are. At most one row matches (migration
    0100's one-open index); the clause is OPEN_MIGRATION above."""
    row = conn.execute(f"SELECT id FROM {names.STATE_TABLE} WHERE {OPEN_MIGRATION}").fetchone()  # noqa: S608
    return None if row is None else int(row[0])
