"""The four commands (migrate, rollback, finalize, status) as one state machine over `state.TRANSITIONS`.

Every step is idempotent and starts by looking at the database, never at a local file: re-running the
same `migrate` after an interruption anywhere (a `kill -9` included) continues from what was committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import psycopg

from ragfr import stop
from ragfr.db import catalog, ddl, filter_indexes, index_lock, names
from ragfr.db.connect import connect
from ragfr.db.ddl import LockBudget
from ragfr.embed import load_embedder, parse_spec
from ragfr.embed.space import EmbeddingSpace, read_space
from ragfr.embmigrate import backfill, indexing, labels, state, swap, verify
from ragfr.embmigrate.backfill import PassageEmbedder
from ragfr.embmigrate.errors import MigrationStateError, VerificationError
from ragfr.embmigrate.faults import kill_point
from ragfr.embmigrate.settings import MigrationSettings
from ragfr.embmigrate.state import Phase
from ragfr.errors import ConfigError, DatabaseError, EmbeddingSpaceError
from ragfr.progress import DEFAULT_EVERY

log = logging.getLogger(__name__)

Say = Callable[[str], None]
# Called after the switch (or a rollback) has committed, e.g. to point Open WebUI at the new space.
SpaceHook = Callable[[str, int], None]

HNSW_MAX_DIMS = 2000  # pgvector 0.8: HNSW/IVFFlat index `vector` columns of at most 2,000 dimensions
PROBE_TEXT = "Ceci est une phrase de contrôle pour mesurer la dimension du modèle."


@dataclass(frozen=True, kw_only=True)
class MigrateOptions(MigrationSettings):
    dsn: str
    progress: bool = True
    progress_every: int = DEFAULT_EVERY
    dsn_given: bool = False  # --dsn on the command line, not DATABASE_URL: a resume hint must say to repeat it

    @property
    def budget(self) -> LockBudget:
        return LockBudget(self.lock_timeout, self.lock_wait)

    def command(self, **change: Any) -> str:
        """The command that resumes this migration, with the options this run was given (and `change`)."""
        dsn = " --dsn …" if self.dsn_given else ""  # the same DSN; never echoed (it may hold a password)
        return " ".join(["ragfr embeddings migrate", *self.given_args(**change)]) + dsn


def open_connection(dsn: str) -> psycopg.Connection:
    """Autocommit session (transactions are explicit, CREATE INDEX CONCURRENTLY needs none open)."""
    conn = connect(dsn, autocommit=True)
    # What pg_stat_activity shows; `ragfr embeddings <verb>` while the command holds the vector-index lock.
    conn.execute("SET application_name = 'ragfr embeddings'")
    # A killed migrator's backend must stop too, not finish a long index build nobody will use.
    conn.execute("SET client_connection_check_interval = '1s'")
    return conn


def check_options(opts: MigrateOptions) -> None:
    if opts.batch < 1 or opts.batch > 10_000:
        raise ConfigError(f"--batch must be between 1 and 10000, got {opts.batch}")
    if opts.dims is not None and not 1 <= opts.dims <= HNSW_MAX_DIMS:
        raise ConfigError(f"--dims must be between 1 and {HNSW_MAX_DIMS} (pgvector's HNSW limit), got {opts.dims}")
    if not 0.0 < opts.min_recall <= 1.0:
        raise ConfigError(f"--min-recall must be in (0, 1], got {opts.min_recall}")
    if opts.recall_sample < 1:
        raise ConfigError(f"--recall-sample must be at least 1, got {opts.recall_sample}")
    if opts.ef_search < 1 or opts.ef_search > 1000:
        raise ConfigError(f"--ef-search must be between 1 and 1000, got {opts.ef_search}")
    if opts.progress_every < 1:
        raise ConfigError(f"--progress-every must be at least 1, got {opts.progress_every}")
    _ = opts.budget  # validates --lock-timeout / --lock-wait


def check_server_settings(conn: psycopg.Connection, opts: MigrateOptions) -> None:
    """Values only the server can judge, judged before any work: a bad --maintenance-work-mem used to
    surface at the index build, after the whole backfill."""
    try:
        with conn.transaction():
            conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (opts.maintenance_work_mem,))
    except psycopg.errors.InvalidParameterValue as exc:
        raise ConfigError(f"--maintenance-work-mem {opts.maintenance_work_mem!r}: {exc.diag.message_primary}; "
                          "give a size such as 256MB or 1GB (at least 1MB)") from None


CMD = "ragfr embeddings"


def open_elsewhere(current: state.Migration, target: str) -> str | None:
    """Why `migrate --to target` cannot run while `current` is open, naming what works now; None if it can."""
    if current.to_model == target:
        return None
    if current.phase is Phase.SWITCHED:
        return (
            f"migration #{current.id} to {current.to_model} is switched and keeps the old vectors; run "
            f"`{CMD} finalize` to keep {current.to_model} (or `{CMD} rollback` to return to {current.from_model}), "
            f"then migrate to {target}; nothing was changed"
        )
    return (
        f"migration #{current.id} to {current.to_model} is open (phase {current.phase}); resume it with "
        f"`{CMD} migrate --to {current.to_model}`, or abandon it with `{CMD} rollback`, then migrate to {target}; "
        "nothing was changed"
    )


def preflight(conn: psycopg.Connection) -> list[str]:
    """What would make a new migration refuse to start (each a full sentence); empty when it can start."""
    problems = []
    for leftover in (names.VECTOR_NEXT, names.VECTOR_PREV, names.MODEL_NEXT, names.MODEL_PREV):
        if catalog.column(conn, leftover) is not None:
            problems.append(
                f"{names.TABLE}.{leftover} exists but no migration is open (created by hand?); "
                f"drop it (ALTER TABLE {names.TABLE} DROP COLUMN {leftover}) before migrating"
            )
    unexpected = [d for d in catalog.dependents(conn, names.VECTOR) if names.INDEX not in d]
    unexpected += catalog.dependents(conn, names.MODEL)
    if unexpected:
        problems.append(
            f"objects depend on {names.TABLE}.vector/embedding_model and would not follow the switch: "
            f"{', '.join(unexpected)}; drop them before migrating"
        )
    no_text = conn.execute(
        f"SELECT count(*) FROM {names.TABLE} WHERE text IS NULL OR text = ''"  # noqa: S608
    ).fetchone()
    if no_text and no_text[0]:
        problems.append(
            f"{no_text[0]} chunk(s) have no text to re-embed (text NULL or empty); delete or fix them first"
        )
    return problems


def load_target(spec: str, dims: int | None, batch: int) -> tuple[PassageEmbedder, int]:
    """The target embedder and the dimension it REALLY returns (one probe), checked against --dims."""
    embedder = load_embedder(parse_spec(spec), batch_size=batch, cache=False)
    probe = embedder.embed_passages([PROBE_TEXT])
    actual = len(probe[0])
    if dims is not None and dims != actual:
        raise EmbeddingSpaceError(
            f"--dims {dims} disagrees with {embedder.model_id}, which returns {actual}-dimensional vectors; "
            "nothing was changed"
        )
    if actual > HNSW_MAX_DIMS:
        raise EmbeddingSpaceError(
            f"{embedder.model_id} returns {actual} dimensions; pgvector's HNSW index takes at most {HNSW_MAX_DIMS}"
        )
    return embedder, actual


def migrate(opts: MigrateOptions, say: Say, on_switch: SpaceHook | None = None) -> int:
    check_options(opts)
    target = parse_spec(opts.to).model_id
    with open_connection(opts.dsn) as conn:
        catalog.require_schema(conn)
        check_server_settings(conn, opts)
        with index_lock.index_lock(conn, f"{CMD} migrate"):
            space = read_space(conn)
            current = state.open_migration(conn)
            refusal = open_elsewhere(current, target) if current is not None else None
            if refusal:
                raise MigrationStateError(refusal)
            if current is not None and current.phase is Phase.SWITCHED:
                say(f"already switched to {target}; old vectors kept until `{CMD} finalize` "
                    f"(or `{CMD} rollback` to return to {current.from_model})")
                if on_switch is not None:
                    on_switch(current.to_model, current.to_dims)
                _relabel(conn, current, current.from_model, current.to_model, say, opts.command())
                return 0
            if current is None and space.model == target:
                if opts.dims is not None and opts.dims != space.dims:
                    raise EmbeddingSpaceError(
                        f"the database already uses {target} with {space.dims} dims, --dims says {opts.dims}"
                    )
                say(f"the database already uses {target} ({space.dims} dims); nothing to do")
                return 0
            embedder, dims = load_target(opts.to, opts.dims, opts.batch)
            if current is None:
                migration_id = _prepare(conn, space, target, dims, say, opts.budget)
            else:
                if current.to_dims != dims:
                    raise EmbeddingSpaceError(
                        f"the open migration expects {current.to_dims}-dim vectors from {target}, "
                        f"which now returns {dims}; abandon it with `{CMD} rollback`, then start again"
                    )
                migration_id = current.id
                say(f"resuming migration #{migration_id} to {target} (phase {current.phase})")
            try:
                _run(conn, migration_id, embedder, dims, opts, say, on_switch)
            except stop.Stopped as stopped:
                raise _kept(conn, stopped, opts.command()) from None
            switched = state.open_migration(conn)
            if switched is not None and switched.phase is Phase.SWITCHED:
                _relabel(conn, switched, switched.from_model, switched.to_model, say, opts.command())
            return 0


def _kept(conn: psycopg.Connection, stopped: stop.Stopped, resume: str) -> stop.Stopped:
    """The one line a stopped run ends with: what is kept, and the command that goes on from there."""
    current = state.open_migration(conn)
    name = stopped.signal_name
    if current is None:
        return stop.Stopped(stopped.signum, f"{name}: stopped; no migration is open")
    if current.phase is Phase.SWITCHED:
        what = f"{current.rows_reembedded_old} row(s) re-embedded for the old space so far are kept"
        resume = f"{CMD} rollback"
    else:
        pending = backfill.pending(conn, backfill.NEXT)
        what = f"{current.rows_embedded} chunk(s) embedded and committed are kept, {pending} still to embed"
    return stop.Stopped(
        stopped.signum,
        f"{name}: migration #{current.id} stopped in phase {current.phase}; {what}. Resume with `{resume}`",
    )


def _relabel(conn: psycopg.Connection, mig: state.Migration, old: str, new: str, say: Say, resume: str) -> int:
    """After the space changed to `new`: the chunks' vmetadata labels follow (ragfr.embmigrate.labels)."""
    try:
        n = labels.relabel(conn, old, new)
    except stop.Stopped as stopped:
        raise stop.Stopped(
            stopped.signum,
            f"{stopped.signal_name}: migration #{mig.id}: document_chunk.vector is {new}; stopped while rewriting "
            f"the model named in vmetadata.{labels.KEY} (chunks rewritten so far are kept, the others still name "
            f"{old}). Finish with `{resume}`",
        ) from None
    if n:
        say(f"vmetadata.{labels.KEY} of {n} chunk(s) now names {new}")
    return n


def _prepare(
    conn: psycopg.Connection, space: EmbeddingSpace, target: str, dims: int, say: Say, budget: LockBudget
) -> int:
    problems = preflight(conn)
    if problems:
        raise DatabaseError(f"{problems[0]}; nothing was changed")

    def work(c: psycopg.Connection) -> int:
        migration_id = state.create(c, space.model, space.dims, target, dims)
        ddl.add_next(c, dims)
        return migration_id

    migration_id = ddl.in_locked_transaction(conn, "prepare", work, budget)
    say(f"migration #{migration_id}: {space.model} ({space.dims} dims) -> {target} ({dims} dims); "
        f"shadow column {names.VECTOR_NEXT} added")
    kill_point("after-prepare")
    return migration_id


def _phase(conn: psycopg.Connection, migration_id: int) -> Phase:
    stop.checkpoint()  # between steps: everything before this point is committed
    current = state.open_migration(conn)
    if current is None or current.id != migration_id:
        found = f"#{current.id} ({current.phase})" if current else "none"
        raise MigrationStateError(
            f"migration #{migration_id} is no longer the open one (open now: {found}); "
            "another process rolled it back or finalized it: see `ragfr embeddings status`"
        )
    return current.phase


def _run(
    conn: psycopg.Connection,
    migration_id: int,
    embedder: PassageEmbedder,
    dims: int,
    opts: MigrateOptions,
    say: Say,
    on_switch: SpaceHook | None,
) -> None:
    if _phase(conn, migration_id) is Phase.BACKFILL:
        written = backfill.fill(conn, migration_id, backfill.NEXT, embedder, dims, opts.batch, progress=opts.progress,
                                progress_every=opts.progress_every)
        with conn.transaction():
            state.set_phase(conn, migration_id, Phase.INDEX)
        say(f"backfill done: {written} chunk(s) embedded in this run")
        kill_point("after-backfill")
    if _phase(conn, migration_id) is Phase.INDEX:
        live = catalog.index(conn, names.INDEX)
        if live is None:
            raise MigrationStateError(f"index {names.INDEX} is missing: the schema was changed outside ragfr "
                                      "(re-create it with `ragfr migrate`)")
        built = indexing.ensure_index(conn, live, names.INDEX_NEXT, names.VECTOR_NEXT, opts.maintenance_work_mem)
        # The declared filters' graphs of the new space, renamed with the shared one at the switch: searches
        # filtered on them never fall back to the shared graph's long filtered walk after it.
        shadows = filter_indexes.build_shadows(conn, live, names.VECTOR_NEXT, dims,
                                               maintenance_work_mem=opts.maintenance_work_mem, say=say)
        kill_point("after-index")
        with conn.transaction():
            state.set_phase(conn, migration_id, Phase.VERIFY)
        say(f"index {names.INDEX_NEXT} {'built' if built else 'already valid'}"
            + (f", and {len(shadows)} declared filter index(es)" if shadows else ""))
    if _phase(conn, migration_id) in (Phase.VERIFY, Phase.READY):
        _verify(conn, migration_id, embedder, dims, opts, say)
        kill_point("after-verify")
    if opts.no_switch:
        say("verified; not switching (--no-switch). Re-run the same command without it to switch.")
        return
    stop.checkpoint()
    _switch(conn, migration_id, embedder, dims, opts, say)
    kill_point("after-switch")
    if on_switch is not None:
        on_switch(embedder.model_id, dims)


def _catch_up(conn: psycopg.Connection, fill: Callable[[], int], pending: Callable[[], int], batch: int,
              rounds: int = 5) -> None:
    """Embed rows written meanwhile, without any lock, until at most one batch is left (or `rounds` passes:
    under a steady stream of writes the locked catch-up then embeds at most what arrived in one pass)."""
    for _ in range(rounds):
        fill()
        if pending() <= batch:
            return


def _live_column(conn: psycopg.Connection) -> catalog.Column:
    live = catalog.column(conn, names.VECTOR)
    if live is None:
        raise MigrationStateError(f"column document_chunk.{names.VECTOR} is missing: the schema was changed "
                                  "outside ragfr")
    return live


def _verify(
    conn: psycopg.Connection,
    migration_id: int,
    embedder: PassageEmbedder,
    dims: int,
    opts: MigrateOptions,
    say: Say,
) -> None:
    caught = backfill.fill(conn, migration_id, backfill.NEXT, embedder, dims, opts.batch, progress=opts.progress,
                           progress_every=opts.progress_every)
    if caught:
        say(f"caught up {caught} chunk(s) written during the migration")
    done = verify.completeness(conn, names.VECTOR_NEXT, names.MODEL_NEXT, embedder.model_id)
    if not done.complete:
        raise VerificationError(
            f"new space incomplete: {done.missing} chunk(s) without a vector, {done.no_text} without text, "
            f"{done.wrong_model} from another model; resume with `{opts.command()}`"
        )
    recall = verify.recall_at_10(
        conn, names.VECTOR_NEXT, names.INDEX_NEXT, sample=opts.recall_sample, ef_search=opts.ef_search
    )
    say(
        f"verified: {done.rows} chunk(s) have a {dims}-dim {embedder.model_id} vector; HNSW recall@10 "
        f"{recall.mean:.3f} (worst {recall.worst:.2f}) over {recall.sample} sampled queries, ef_search {opts.ef_search}"
    )
    if recall.mean < opts.min_recall:
        raise VerificationError(
            f"HNSW recall@10 {recall.mean:.3f} is below --min-recall {opts.min_recall}; re-run "
            f"`{opts.command(ef_search=min(opts.ef_search * 2, 1000))}` (or `{CMD} rollback` to abandon)"
        )
    with conn.transaction():
        state.set_phase(
            conn, migration_id, Phase.READY, recall_at_10=recall.mean, recall_sample=recall.sample
        )


def _switch(
    conn: psycopg.Connection,
    migration_id: int,
    embedder: PassageEmbedder,
    dims: int,
    opts: MigrateOptions,
    say: Say,
) -> None:
    # Catch up outside any lock until at most one batch is left, so that the locked transaction only meets
    # the last few writes.
    _catch_up(conn, lambda: backfill.fill(conn, migration_id, backfill.NEXT, embedder, dims, opts.batch,
                                          progress=False), lambda: backfill.pending(conn, backfill.NEXT), opts.batch)
    live = _live_column(conn)

    def work(c: psycopg.Connection) -> int:
        swap.lock_writers(c)  # late rows are embedded while searches go on; writers wait
        late = backfill.fill(c, migration_id, backfill.NEXT, embedder, dims, opts.batch, progress=False,
                             stoppable=False)
        done = verify.completeness(c, names.VECTOR_NEXT, names.MODEL_NEXT, embedder.model_id)
        if not done.complete:
            raise VerificationError(f"new space incomplete at the switch ({done}); nothing was switched")
        swap.lock_table(c)  # readers wait only for the renames below
        swap.forward(c, to_model=embedder.model_id, to_dims=dims, live_not_null=live.not_null)
        state.set_phase(c, migration_id, Phase.SWITCHED)
        kill_point("switch-before-commit")
        return late

    late = ddl.in_locked_transaction(conn, "switch", work, opts.budget)
    say(
        f"switched: document_chunk.vector is now {embedder.model_id} ({dims} dims) with index {names.INDEX}"
        f"{f'; {late} late write(s) embedded under the lock' if late else ''}; old vectors kept in "
        f"{names.VECTOR_PREV} until `ragfr embeddings finalize`"
    )


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
                last = state.last_migration(conn)
                if last is not None and last.phase is Phase.ROLLED_BACK and last.switched_at is not None:
                    # A rollback stopped while rewriting the labels: its re-run finishes them.
                    if _relabel(conn, last, last.to_model, last.from_model, say, f"{CMD} rollback"):
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
            if current.phase in state.BEFORE_SWITCH:

                def abort(c: psycopg.Connection) -> None:
                    ddl.drop_columns(c, names.TRIGGER_NEXT, names.VECTOR_NEXT, names.MODEL_NEXT)
                    state.set_phase(c, current.id, Phase.ROLLED_BACK)
                    kill_point("rollback-drop-before-commit")

                ddl.in_locked_transaction(conn, "rollback", abort, budget)
                say(f"rolled back migration #{current.id} before its switch: {current.from_model} stays live")
                return 0
            try:
                _rollback_switched(conn, current, batch, progress, say, budget, progress_every)
            except stop.Stopped as stopped:
                raise _kept(conn, stopped, f"{CMD} rollback") from None
            if on_rollback is not None:
                on_rollback(current.from_model, current.from_dims)
            _relabel(conn, current, current.to_model, current.from_model, say, f"{CMD} rollback")
    return 0


def _rollback_switched(
    conn: psycopg.Connection, current: state.Migration, batch: int, progress: bool, say: Say,
    budget: LockBudget | None, progress_every: int,
) -> None:
    embedder: PassageEmbedder | None = None

    def old_embedder() -> PassageEmbedder:
        nonlocal embedder
        if embedder is None:
            embedder, _ = load_target(current.from_model, current.from_dims, batch)
        return embedder

    if backfill.pending(conn, backfill.PREV):
        backfill.fill(conn, current.id, backfill.PREV, old_embedder(), current.from_dims, batch, progress=progress,
                      progress_every=progress_every)
    live = _live_column(conn)

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


def finalize(dsn: str, say: Say, budget: LockBudget | None = None) -> int:
    with open_connection(dsn) as conn:
        catalog.require_schema(conn)
        with index_lock.index_lock(conn, f"{CMD} finalize"):
            current = state.open_migration(conn)
            if current is None:
                raise MigrationStateError(
                    f"finalize applies after the switch; no migration is open (`{CMD} status` shows the last one)"
                )
            if current.phase is not Phase.SWITCHED:
                raise MigrationStateError(
                    f"finalize applies after the switch; migration #{current.id} to {current.to_model} is in phase "
                    f"{current.phase}: continue it to the switch with `{CMD} migrate --to {current.to_model}`, "
                    f"or abandon it with `{CMD} rollback`"
                )

            # Before the drop: a migration stopped while rewriting its labels is finished here, while it is
            # still open and `finalize` can be run again.
            _relabel(conn, current, current.from_model, current.to_model, say, f"{CMD} finalize")

            def work(c: psycopg.Connection) -> None:
                ddl.drop_columns(c, names.TRIGGER_PREV, names.VECTOR_PREV, names.MODEL_PREV)
                state.set_phase(c, current.id, Phase.FINALIZED)

            ddl.in_locked_transaction(conn, "finalize", work, budget)
    say(
        f"finalized migration #{current.id}: {current.from_model} vectors and index dropped. Their heap space "
        "is reused by later writes; VACUUM FULL (or pg_repack) returns it to the OS"
    )
    return 0


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
        indexes = {name: catalog.index(conn, name) for name in (names.INDEX_NEXT, names.INDEX_PREV)}
        return Status(space.model, space.dims, total, holder, current, open=True,
                      pending=backfill.pending(conn, slot), pending_column=slot.vector,
                      **{key: IndexState(idx.name, idx.valid) if idx else None
                         for key, idx in (("index_next", indexes[names.INDEX_NEXT]),
                                          ("index_prev", indexes[names.INDEX_PREV]))})
