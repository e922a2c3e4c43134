"""Why `migrate` would refuse to start, judged before anything is written (shared by the run and its dry run)."""

from __future__ import annotations

import psycopg

from ragfr.embmigrate import catalog, names, state
from ragfr.embmigrate.session import CMD
from ragfr.embmigrate.state import Phase
from ragfr.vector_index import shape


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
        if shape.column(conn, leftover) is not None:
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
