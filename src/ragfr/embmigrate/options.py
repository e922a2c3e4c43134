"""`ragfr embeddings migrate`'s options, and their checks before any work (the ones only the server can judge
included)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from ragfr.db.ddl import LockBudget
from ragfr.embmigrate.settings import MigrationSettings
from ragfr.embmigrate.target import HNSW_MAX_DIMS
from ragfr.errors import ConfigError
from ragfr.progress import DEFAULT_EVERY


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
