"""What every `ragfr embeddings` command shares: its database session, the callbacks it reports through,
and the lines it ends with when a signal stops it or the space changed under the chunks' labels."""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from ragfr import stop
from ragfr.db.connect import connect
from ragfr.embmigrate import backfill, labels, names, state
from ragfr.embmigrate.errors import MigrationStateError
from ragfr.embmigrate.state import Phase
from ragfr.vector_index import shape

CMD = "ragfr embeddings"

Say = Callable[[str], None]
# Called after the switch (or a rollback) has committed, e.g. to point Open WebUI at the new space.
SpaceHook = Callable[[str, int], None]


def open_connection(dsn: str) -> psycopg.Connection:
    """Autocommit session (transactions are explicit, CREATE INDEX CONCURRENTLY needs none open)."""
    conn = connect(dsn, autocommit=True)
    # What pg_stat_activity shows; `ragfr embeddings <verb>` while the command holds the vector-index lock.
    conn.execute("SET application_name = 'ragfr embeddings'")
    # A killed migrator's backend must stop too, not finish a long index build nobody will use.
    conn.execute("SET client_connection_check_interval = '1s'")
    return conn


def live_column(conn: psycopg.Connection) -> shape.Column:
    live = shape.column(conn, names.VECTOR)
    if live is None:
        raise MigrationStateError(f"column document_chunk.{names.VECTOR} is missing: the schema was changed "
                                  "outside ragfr")
    return live


def kept(conn: psycopg.Connection, stopped: stop.Stopped, resume: str) -> stop.Stopped:
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


def relabel(conn: psycopg.Connection, mig: state.Migration, old: str, new: str, say: Say, resume: str) -> int:
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
