"""`ragfr embeddings status`: the database's embedding space and its migration, read in one session, and
the command to run next; changes nothing."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ragfr.embed.space import read_space
from ragfr.embmigrate import backfill, catalog, names, state
from ragfr.embmigrate.session import CMD, open_connection
from ragfr.embmigrate.state import Phase
from ragfr.vector_index import lock as index_lock
from ragfr.vector_index import shape


@dataclass(frozen=True)
class IndexState:
    name: str
    valid: bool


@dataclass(frozen=True)
class Status:
    """Everything an operator needs to decide the next step (`ragfr embeddings status`, --json: as_dict)."""

    space_model: str
    space_dims: int
    chunks: int
    running_holder: str | None  # who holds the vector-index lock, or None
    migration: state.Migration | None  # the open one, else the last one
    open: bool
    pending: int | None = None  # rows of the pending column still NULL (open migrations)
    pending_column: str | None = None
    index_next: IndexState | None = None
    index_prev: IndexState | None = None

    @property
    def running(self) -> bool:
        return self.running_holder is not None

    def next_action(self) -> str | None:
        """What to run now, from the phase's moves in state.TRANSITIONS; never a command the current state
        would refuse (a running migrator refuses all). None when no migration is open."""
        if not self.open or self.migration is None:
            return None
        if self.running:
            return (f"a migrator is running: wait for it (`{CMD} status` again), or stop it with Ctrl-C / kill -TERM "
                    "on its host (it stops after its batch in flight); any other migrate, rollback or finalize is "
                    "refused meanwhile")
        moves = state.TRANSITIONS[self.migration.phase]
        if Phase.FINALIZED in moves:
            return f"`{CMD} finalize` to drop the old vectors, or `{CMD} rollback`"
        resume = f"`{CMD} migrate --to {self.migration.to_model}`"
        go = " (without --no-switch) to switch" if Phase.SWITCHED in moves else " to resume"
        return f"{resume}{go} (or `{CMD} rollback` to abandon)"

    def as_dict(self) -> dict[str, Any]:
        return {
            "space": {"model": self.space_model, "dims": self.space_dims},
            "chunks": self.chunks,
            "running": self.running,
            "running_holder": self.running_holder,
            "migration": self.migration.as_dict() if self.migration else None,
            "open": self.open,
            **({"pending": self.pending, "pending_column": self.pending_column,
                "index_next": asdict(self.index_next) if self.index_next else None,
                "index_prev": asdict(self.index_prev) if self.index_prev else None} if self.open else {}),
        }


def status(dsn: str) -> Status:
    """The database's embedding space and its migration, read in one session; changes nothing."""
    with open_connection(dsn) as conn:
        catalog.require_schema(conn)
        space = read_space(conn)
        current = state.open_migration(conn)
        last = current or state.last_migration(conn)
        total, _ = catalog.row_counts(conn, names.VECTOR)
        holder = index_lock.holder(conn) if index_lock.is_held(conn) else None
        if current is None:
            return Status(space.model, space.dims, total, holder, last, open=False)
        slot = backfill.PREV if current.phase is Phase.SWITCHED else backfill.NEXT
        indexes = {name: shape.index(conn, name) for name in (names.INDEX_NEXT, names.INDEX_PREV)}
        return Status(space.model, space.dims, total, holder, current, open=True,
                      pending=backfill.pending(conn, slot), pending_column=slot.vector,
                      **{key: IndexState(idx.name, idx.valid) if idx else None
                         for key, idx in (("index_next", indexes[names.INDEX_NEXT]),
                                          ("index_prev", indexes[names.INDEX_PREV]))})
