"""`ragfr embeddings migrate`: one run object (MigrationRun) whose methods are the phases' steps, over the
moves of `state.TRANSITIONS`. Rollback, finalize and status are their own modules.

Every step is idempotent and starts by looking at the database, never at a local file: re-running the
same `migrate` after an interruption anywhere (a `kill -9` included) continues from what was committed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from ragfr import stop
from ragfr.db import ddl
from ragfr.db.ddl import LockBudget
from ragfr.embed import parse_spec
from ragfr.embed.space import EmbeddingSpace, read_space
from ragfr.embmigrate import backfill, catalog, columns, indexing, names, state, swap, target, verify
from ragfr.embmigrate.backfill import PassageEmbedder
from ragfr.embmigrate.errors import MigrationStateError, VerificationError
from ragfr.embmigrate.faults import kill_point
from ragfr.embmigrate.options import MigrateOptions, check_options, check_server_settings
from ragfr.embmigrate.preflight import open_elsewhere, preflight
from ragfr.embmigrate.session import CMD, Say, SpaceHook, kept, live_column, open_connection, relabel
from ragfr.embmigrate.state import Phase
from ragfr.errors import DatabaseError, EmbeddingSpaceError
from ragfr.vector_index import graphs, shape
from ragfr.vector_index import lock as index_lock


def migrate(opts: MigrateOptions, say: Say, on_switch: SpaceHook | None = None) -> int:
    check_options(opts)
    to_model = parse_spec(opts.to).model_id
    with open_connection(opts.dsn) as conn:
        catalog.require_schema(conn)
        check_server_settings(conn, opts)
        with index_lock.index_lock(conn, f"{CMD} migrate"):
            run = _start(conn, opts, to_model, say, on_switch)
            if run is None:
                return 0
            try:
                run.run()
            except stop.Stopped as stopped:
                raise kept(conn, stopped, opts.command()) from None
            switched = state.open_migration(conn)
            if switched is not None and switched.phase is Phase.SWITCHED:
                relabel(conn, switched, switched.from_model, switched.to_model, say, opts.command())
            return 0


def _start(
    conn: psycopg.Connection, opts: MigrateOptions, to_model: str, say: Say, on_switch: SpaceHook | None
) -> MigrationRun | None:
    """The run that goes on from what the database holds (a new migration, or the open one resumed); None
    when there is nothing to run. Refuses, changing nothing, when another migration is open."""
    space = read_space(conn)
    current = state.open_migration(conn)
    refusal = open_elsewhere(current, to_model) if current is not None else None
    if refusal:
        raise MigrationStateError(refusal)
    if current is not None and current.phase is Phase.SWITCHED:
        say(f"already switched to {to_model}; old vectors kept until `{CMD} finalize` "
            f"(or `{CMD} rollback` to return to {current.from_model})")
        if on_switch is not None:
            on_switch(current.to_model, current.to_dims)
        relabel(conn, current, current.from_model, current.to_model, say, opts.command())
        return None
    if current is None and space.model == to_model:
        if opts.dims is not None and opts.dims != space.dims:
            raise EmbeddingSpaceError(
                f"the database already uses {to_model} with {space.dims} dims, --dims says {opts.dims}"
            )
        say(f"the database already uses {to_model} ({space.dims} dims); nothing to do")
        return None
    embedder, dims = target.load_target(opts.to, opts.dims, opts.batch)
    if current is None:
        migration_id = _prepare(conn, space, to_model, dims, say, opts.budget)
    else:
        if current.to_dims != dims:
            raise EmbeddingSpaceError(
                f"the open migration expects {current.to_dims}-dim vectors from {to_model}, "
                f"which now returns {dims}; abandon it with `{CMD} rollback`, then start again"
            )
        migration_id = current.id
        say(f"resuming migration #{migration_id} to {to_model} (phase {current.phase})")
    return MigrationRun(conn, migration_id, embedder, dims, opts, say, on_switch)


def _prepare(
    conn: psycopg.Connection, space: EmbeddingSpace, to_model: str, dims: int, say: Say, budget: LockBudget
) -> int:
    problems = preflight(conn)
    if problems:
        raise DatabaseError(f"{problems[0]}; nothing was changed")

    def work(c: psycopg.Connection) -> int:
        migration_id = state.create(c, space.model, space.dims, to_model, dims)
        columns.add_next(c, dims)
        return migration_id

    migration_id = ddl.in_locked_transaction(conn, "prepare", work, budget)
    say(f"migration #{migration_id}: {space.model} ({space.dims} dims) -> {to_model} ({dims} dims); "
        f"shadow column {names.VECTOR_NEXT} added")
    kill_point("after-prepare")
    return migration_id


@dataclass(frozen=True)
class MigrationRun:
    """One `migrate` run of one open migration: what every step shares. `run` walks the phases in the order
    of state.TRANSITIONS; each step commits its work with the move to the next phase, so a run stopped
    anywhere resumes at the step it was in."""

    conn: psycopg.Connection
    migration_id: int
    embedder: PassageEmbedder
    dims: int
    opts: MigrateOptions
    say: Say
    on_switch: SpaceHook | None = None

    def run(self) -> None:
        if self.phase() is Phase.BACKFILL:
            self.backfill()
            kill_point("after-backfill")
        if self.phase() is Phase.INDEX:
            self.index()
        if self.phase() in (Phase.VERIFY, Phase.READY):
            self.verify()
            kill_point("after-verify")
        if self.opts.no_switch:
            self.say("verified; not switching (--no-switch). Re-run the same command without it to switch.")
            return
        stop.checkpoint()
        self.switch()
        kill_point("after-switch")
        if self.on_switch is not None:
            self.on_switch(self.embedder.model_id, self.dims)

    def phase(self) -> Phase:
        """The phase the database records now; refuses if another process ended this migration meanwhile."""
        stop.checkpoint()  # between steps: everything before this point is committed
        current = state.open_migration(self.conn)
        if current is None or current.id != self.migration_id:
            found = f"#{current.id} ({current.phase})" if current else "none"
            raise MigrationStateError(
                f"migration #{self.migration_id} is no longer the open one (open now: {found}); "
                "another process rolled it back or finalized it: see `ragfr embeddings status`"
            )
        return current.phase

    def fill(self, conn: psycopg.Connection, *, progress: bool, stoppable: bool = True) -> int:
        """Embed the rows the new space still lacks (backfill.fill into the shadow column)."""
        return backfill.fill(conn, self.migration_id, backfill.NEXT, self.embedder, self.dims, self.opts.batch,
                             progress=progress, progress_every=self.opts.progress_every, stoppable=stoppable)

    def backfill(self) -> None:
        """backfill -> index: every row gets a vector of the new model, in checkpointed batches."""
        written = self.fill(self.conn, progress=self.opts.progress)
        with self.conn.transaction():
            state.set_phase(self.conn, self.migration_id, Phase.INDEX)
        self.say(f"backfill done: {written} chunk(s) embedded in this run")

    def index(self) -> None:
        """index -> verify: the shadow column's HNSW index, and the declared filters' graphs of the new space."""
        conn, opts = self.conn, self.opts
        live = shape.index(conn, names.INDEX)
        if live is None:
            raise MigrationStateError(f"index {names.INDEX} is missing: the schema was changed outside ragfr "
                                      "(re-create it with `ragfr migrate`)")
        built = indexing.ensure_index(conn, live, names.INDEX_NEXT, names.VECTOR_NEXT, opts.maintenance_work_mem)
        # The declared filters' graphs of the new space, renamed with the shared one at the switch: searches
        # filtered on them never fall back to the shared graph's long filtered walk after it.
        shadows = graphs.build_shadows(conn, live, names.VECTOR_NEXT, self.dims,
                                               maintenance_work_mem=opts.maintenance_work_mem, say=self.say)
        kill_point("after-index")
        with conn.transaction():
            state.set_phase(conn, self.migration_id, Phase.VERIFY)
        self.say(f"index {names.INDEX_NEXT} {'built' if built else 'already valid'}"
                 + (f", and {len(shadows)} declared filter index(es)" if shadows else ""))

    def verify(self) -> None:
        """verify (or ready, again) -> ready: catch up, then completeness and HNSW recall against --min-recall."""
        conn, opts, model = self.conn, self.opts, self.embedder.model_id
        caught = self.fill(conn, progress=opts.progress)
        if caught:
            self.say(f"caught up {caught} chunk(s) written during the migration")
        done = verify.completeness(conn, names.VECTOR_NEXT, names.MODEL_NEXT, model)
        if not done.complete:
            raise VerificationError(
                f"new space incomplete: {done.missing} chunk(s) without a vector, {done.no_text} without text, "
                f"{done.wrong_model} from another model; resume with `{opts.command()}`"
            )
        recall = verify.recall_at_10(
            conn, names.VECTOR_NEXT, names.INDEX_NEXT, sample=opts.recall_sample, ef_search=opts.ef_search
        )
        self.say(
            f"verified: {done.rows} chunk(s) have a {self.dims}-dim {model} vector; HNSW recall@10 "
            f"{recall.mean:.3f} (worst {recall.worst:.2f}) over {recall.sample} sampled queries, "
            f"ef_search {opts.ef_search}"
        )
        if recall.mean < opts.min_recall:
            raise VerificationError(
                f"HNSW recall@10 {recall.mean:.3f} is below --min-recall {opts.min_recall}; re-run "
                f"`{opts.command(ef_search=min(opts.ef_search * 2, 1000))}` (or `{CMD} rollback` to abandon)"
            )
        with conn.transaction():
            state.set_phase(
                conn, self.migration_id, Phase.READY, recall_at_10=recall.mean, recall_sample=recall.sample
            )

    def switch(self) -> None:
        """ready -> switched: the last writes embedded under a lock writers wait on, then the atomic renames."""
        # Catch up outside any lock until at most one batch is left, so that the locked transaction only meets
        # the last few writes.
        _catch_up(lambda: self.fill(self.conn, progress=False), lambda: backfill.pending(self.conn, backfill.NEXT),
                  self.opts.batch)
        live = live_column(self.conn)
        model = self.embedder.model_id

        def work(c: psycopg.Connection) -> int:
            swap.lock_writers(c)  # late rows are embedded while searches go on; writers wait
            late = self.fill(c, progress=False, stoppable=False)
            done = verify.completeness(c, names.VECTOR_NEXT, names.MODEL_NEXT, model)
            if not done.complete:
                raise VerificationError(f"new space incomplete at the switch ({done}); nothing was switched")
            swap.lock_table(c)  # readers wait only for the renames below
            swap.forward(c, to_model=model, to_dims=self.dims, live_not_null=live.not_null)
            state.set_phase(c, self.migration_id, Phase.SWITCHED)
            kill_point("switch-before-commit")
            return late

        late = ddl.in_locked_transaction(self.conn, "switch", work, self.opts.budget)
        self.say(
            f"switched: document_chunk.vector is now {model} ({self.dims} dims) with index {names.INDEX}"
            f"{f'; {late} late write(s) embedded under the lock' if late else ''}; old vectors kept in "
            f"{names.VECTOR_PREV} until `ragfr embeddings finalize`"
        )


def _catch_up(fill: Callable[[], int], pending: Callable[[], int], batch: int, rounds: int = 5) -> None:
    """Embed rows written meanwhile, without any lock, until at most one batch is left (or `rounds` passes:
    under a steady stream of writes the locked catch-up then embeds at most what arrived in one pass)."""
    for _ in range(rounds):
        fill()
        if pending() <= batch:
            return
