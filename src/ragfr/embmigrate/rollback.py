"""`ragfr embeddings rollback`: before the switch, drop the shadow; after it, re-embed the rows the old space
lacks with the old model, then swap back in one transaction."""

from __future__ import annotations

import psycopg

from ragfr import stop
from ragfr.db import ddl
from ragfr.db.ddl import LockBudget
from ragfr.embmigrate import backfill, catalog, columns, names, state, swap, target, verify
from ragfr.embmigrate.backfill import PassageEmbedder
from ragfr.embmigrate.errors import MigrationStateError, VerificationError
from ragfr.embmigrate.faults import kill_point
from ragfr.embmigrate.session import CMD, Say, SpaceHook, kept, live_column, open_connection, relabel
from ragfr.embmigrate.state import Phase
from ragfr.progress import DEFAULT_EVERY
from ragfr.vector_index import lock as index_lock


def rollback(
    dsn: str, say: Say, *, batch: int = 64, progress: bool = True, on_rollback: SpaceHook | None = None,
    budget: LockBudget | None = None, progress_every: int = DEFAULT_EVERY,
) -> int:
    """Before the switch: drop the shadow. After: re-embed rows the old space lacks, then swap back."""
    with open_connection(dsn) as conn:
        catalog.require_schema(conn)
        with index_lock.index_lock(conn, f"{CMD} rollback"):
            current = state.open_migration(conn)
            if current is None:
                return _none_open(conn, say)
            if current.phase in state.BEFORE_SWITCH:
                _drop_shadow(conn, current, budget)
                say(f"rolled back migration #{current.id} before its switch: {current.from_model} stays live")
                return 0
            try:
                _rollback_switched(conn, current, batch, progress, say, budget, progress_every)
            except stop.Stopped as stopped:
                raise kept(conn, stopped, f"{CMD} rollback") from None
            if on_rollback is not None:
                on_rollback(current.from_model, current.from_dims)
            relabel(conn, current, current.to_model, current.from_model, say, f"{CMD} rollback")
    return 0


def _none_open(conn: psycopg.Connection, say: Say) -> int:
    """No migration is open: finish the labels of a rollback stopped while rewriting them, or refuse."""
    last = state.last_migration(conn)
    if last is not None and last.phase is Phase.ROLLED_BACK and last.switched_at is not None:
        # A rollback stopped while rewriting the labels: its re-run finishes them.
        if relabel(conn, last, last.to_model, last.from_model, say, f"{CMD} rollback"):
            say(f"migration #{last.id} was already rolled back; its labels are now done")
            return 0
    if last is not None and last.phase is Phase.FINALIZED:
        raise MigrationStateError(
            f"migration #{last.id} was finalized: the {last.from_model} vectors are gone, so it cannot "
            f"be rolled back; to return to {last.from_model}, migrate to it: "
            f"`{CMD} migrate --to {last.from_model}`"
        )
    raise MigrationStateError(
        f"no embedding migration is open: nothing to roll back (`{CMD} status` shows the last one)"
    )


def _drop_shadow(conn: psycopg.Connection, current: state.Migration, budget: LockBudget | None) -> None:
    """Before the switch the live space was never touched: dropping the shadow column is the whole rollback."""

    def abort(c: psycopg.Connection) -> None:
        columns.drop_columns(c, names.TRIGGER_NEXT, names.VECTOR_NEXT, names.MODEL_NEXT)
        state.set_phase(c, current.id, Phase.ROLLED_BACK)
        kill_point("rollback-drop-before-commit")

    ddl.in_locked_transaction(conn, "rollback", abort, budget)


def _rollback_switched(
    conn: psycopg.Connection, current: state.Migration, batch: int, progress: bool, say: Say,
    budget: LockBudget | None, progress_every: int,
) -> None:
    embedder: PassageEmbedder | None = None

    def old_embedder() -> PassageEmbedder:
        nonlocal embedder
        if embedder is None:
            embedder, _ = target.load_target(current.from_model, current.from_dims, batch)
        return embedder

    if backfill.pending(conn, backfill.PREV):
        backfill.fill(conn, current.id, backfill.PREV, old_embedder(), current.from_dims, batch, progress=progress,
                      progress_every=progress_every)
    live = live_column(conn)

    def work(c: psycopg.Connection) -> None:
        swap.lock_writers(c)
        if backfill.pending(c, backfill.PREV):
            backfill.fill(c, current.id, backfill.PREV, old_embedder(), current.from_dims, batch, progress=False,
                          stoppable=False)
        done = verify.completeness(c, names.VECTOR_PREV, names.MODEL_PREV, current.from_model)
        if not done.complete:
            raise VerificationError(f"old space incomplete ({done}); nothing was rolled back")
        swap.lock_table(c)
        swap.back(c, from_model=current.from_model, from_dims=current.from_dims, live_not_null=live.not_null)
        state.set_phase(c, current.id, Phase.ROLLED_BACK)
        kill_point("rollback-swap-before-commit")

    stop.checkpoint()
    ddl.in_locked_transaction(conn, "rollback", work, budget)
    say(
        f"rolled back migration #{current.id}: document_chunk.vector is {current.from_model} "
        f"({current.from_dims} dims) again; the {current.to_model} vectors were dropped"
    )
