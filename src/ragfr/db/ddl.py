"""Schema changes on document_chunk, each short and taken under a bounded lock wait.

ALTER TABLE needs an ACCESS EXCLUSIVE lock for a moment. Queued behind a long query, it would block every
reader queued behind IT (Open WebUI's searches included); a short lock_timeout and a retry keep that
stall to at most the timeout per attempt, and a total budget (LockBudget, `--lock-wait`) ends the
retries with the blocking session named.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import psycopg
from psycopg import sql

from ragfr import stop
from ragfr.db import names
from ragfr.db.locks import relation_holders
from ragfr.errors import ConfigError, DatabaseError

log = logging.getLogger(__name__)
T = TypeVar("T")

# Between two attempts the queries that queued behind ours run; the pause is part of the budget.
RETRY_PAUSE_S = 1.0


@dataclass(frozen=True)
class LockBudget:
    """How long a DDL step may wait for its lock: each attempt at most `timeout_s` (Open WebUI's queries
    that arrive meanwhile queue behind it that long), all attempts and pauses together at most `total_s`."""

    timeout_s: float = 2.0
    total_s: float = 60.0

    def __post_init__(self) -> None:
        if not 0.01 <= self.timeout_s <= 60:
            raise ConfigError(f"--lock-timeout must be between 0.01 and 60 seconds, got {self.timeout_s}")
        if not self.timeout_s <= self.total_s <= 86_400:
            raise ConfigError(f"--lock-wait must be between --lock-timeout ({self.timeout_s}) and 86400 seconds, "
                              f"got {self.total_s}")


def in_locked_transaction(
    conn: psycopg.Connection, what: str, work: Callable[[psycopg.Connection], T], budget: LockBudget | None = None
) -> T:
    """Run `work` in one transaction with a bounded lock wait, retrying while the table is busy.

    Each failed attempt is logged with the sessions holding the table (pid, application, since when), and
    how to end one: `SELECT pg_terminate_backend(pid)` (a server pid: `kill` on the client's host would not
    find it).
    """
    budget = budget or LockBudget()
    start = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        try:
            with conn.transaction():
                timeout = sql.Literal(f"{int(budget.timeout_s * 1000)}ms")
                conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(timeout))
                return work(conn)
        # A deadlock (a session that read the table, then wants to write it while we upgrade our lock) is
        # resolved by the server aborting one side; if it is ours, it is one more busy attempt.
        except (psycopg.errors.LockNotAvailable, psycopg.errors.DeadlockDetected):
            holders = lock_holders(conn)
            used = time.monotonic() - start
            if used + RETRY_PAUSE_S + budget.timeout_s > budget.total_s:
                raise DatabaseError(
                    f"{what}: could not lock {names.TABLE} within --lock-wait {budget.total_s:g} s "
                    f"({attempt} attempt(s) of --lock-timeout {budget.timeout_s:g} s, {used:.1f} s waited); {holders}; "
                    f"nothing was changed. "
                    f"{_terminate_hint(conn)}, or wait for it, then re-run the same command"
                ) from None
            stop.checkpoint(f"{what}: stopped while waiting for the {names.TABLE} lock; nothing was changed")
            log.warning(
                "%s: %s is busy (attempt %d, %.0f of --lock-wait %g s used): %s; retrying. %s if it should not be "
                "running", what, names.TABLE, attempt, used, budget.total_s, holders, _terminate_hint(conn),
            )
            time.sleep(RETRY_PAUSE_S)


def lock_holders(conn: psycopg.Connection) -> str:
    """The other sessions holding a lock on the table, for one message line."""
    return relation_holders(conn, names.TABLE)


def _terminate_hint(conn: psycopg.Connection) -> str:
    pids = [int(r[0]) for r in conn.execute(
        "SELECT DISTINCT l.pid FROM pg_locks l WHERE l.locktype = 'relation' AND l.relation = to_regclass(%s)"
        " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"  # OIDs are per database
        " AND l.granted AND l.pid <> pg_backend_pid() ORDER BY 1 LIMIT 3", (names.TABLE,)
    )]
    target = str(pids[0]) if len(pids) == 1 else "PID"
    return f"End a blocking session from SQL with SELECT pg_terminate_backend({target})"
