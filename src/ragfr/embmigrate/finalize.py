"""`ragfr embeddings finalize`: after the switch, keep the new space for good by dropping the old vectors."""

from __future__ import annotations

import psycopg

from ragfr.db import ddl
from ragfr.db.ddl import LockBudget
from ragfr.embmigrate import catalog, columns, names, state
from ragfr.embmigrate.errors import MigrationStateError
from ragfr.embmigrate.session import CMD, Say, open_connection, relabel
from ragfr.embmigrate.state import Phase
from ragfr.vector_index import lock as index_lock


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
            relabel(conn, current, current.from_model, current.to_model, say, f"{CMD} finalize")

            def work(c: psycopg.Connection) -> None:
                columns.drop_columns(c, names.TRIGGER_PREV, names.VECTOR_PREV, names.MODEL_PREV)
                state.set_phase(c, current.id, Phase.FINALIZED)

            ddl.in_locked_transaction(conn, "finalize", work, budget)
    say(
        f"finalized migration #{current.id}: {current.from_model} vectors and index dropped. Their heap space "
        "is reused by later writes; VACUUM FULL (or pg_repack) returns it to the OS"
    )
    return 0
