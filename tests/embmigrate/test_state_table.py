"""The migration's phases and moves are one table (state.TRANSITIONS): the schema's CHECK lists the same
phases, the derived groups follow from it, and set_phase refuses any move it does not list, changing nothing."""

from __future__ import annotations

import re
from collections.abc import Callable

import psycopg
import pytest
from tests.support.paths import REPO

from ragfr.db.phases import OPEN_MIGRATION
from ragfr.embmigrate import state
from ragfr.embmigrate.errors import MigrationStateError
from ragfr.embmigrate.state import Phase


def test_the_schema_check_lists_exactly_the_phases() -> None:
    sql = (REPO / "migrations" / "0100_embedding_migration.sql").read_text(encoding="utf-8")
    check = re.search(r"phase text NOT NULL CHECK \(phase IN \(([^)]*)\)\)", sql)
    assert check is not None
    assert tuple(re.findall(r"'([a-z_]+)'", check.group(1))) == tuple(p.value for p in state.PHASES)
    assert state.PHASES == tuple(Phase) == tuple(state.TRANSITIONS)
    # The one-open index names exactly the terminal phases; ragfr.db's "migration open" clause (built from the
    # table, db/phases.py, where ragfr.db can read it) is the same predicate.
    one_open = re.search(r"WHERE phase NOT IN \(([^)]*)\)", sql)
    assert one_open is not None
    terminal = {p.value for p in state.PHASES if not state.TRANSITIONS[p]}
    assert set(re.findall(r"'([a-z_]+)'", one_open.group(1))) == terminal
    assert set(re.findall(r"'([a-z_]+)'", OPEN_MIGRATION)) == terminal
    assert OPEN_MIGRATION == f"phase NOT IN ({one_open.group(1)})"


def test_parse_phase_returns_members_and_refuses_unknown_names() -> None:
    assert all(state.parse_phase(p.value) is p for p in Phase)
    with pytest.raises(MigrationStateError, match="unknown migration phase 'switching'"):
        state.parse_phase("switching")


def test_groups_are_read_from_the_table() -> None:
    assert state.OPEN_PHASES == (Phase.BACKFILL, Phase.INDEX, Phase.VERIFY, Phase.READY, Phase.SWITCHED)
    assert state.BEFORE_SWITCH == (Phase.BACKFILL, Phase.INDEX, Phase.VERIFY, Phase.READY)
    terminal = [p for p in state.PHASES if not state.TRANSITIONS[p]]
    assert terminal == [Phase.ROLLED_BACK, Phase.FINALIZED]
    # Every open phase can be rolled back; only the switch leads to finalize.
    assert all(Phase.ROLLED_BACK in state.TRANSITIONS[p] for p in state.OPEN_PHASES)
    assert [p for p in state.PHASES if Phase.FINALIZED in state.TRANSITIONS[p]] == [Phase.SWITCHED]


def test_set_phase_follows_the_table_and_refuses_the_rest(source_db: Callable[[int], str]) -> None:
    dsn = source_db(2)
    with psycopg.connect(dsn, autocommit=True) as conn:
        mid = state.create(conn, "local:use-multilingual", 512, "local:multilingual-e5-small", 384)
        for wrong in (Phase.SWITCHED, Phase.FINALIZED, Phase.VERIFY):
            with pytest.raises(MigrationStateError, match=f"cannot move to {wrong.value} from phase backfill"):
                state.set_phase(conn, mid, wrong)
        seen = []
        for phase in (Phase.INDEX, Phase.VERIFY, Phase.READY, Phase.READY, Phase.SWITCHED, Phase.FINALIZED):
            state.set_phase(conn, mid, phase)
            # Stored as the plain name (psycopg dumps the str subclass as text), read back as the member.
            stored = conn.execute("SELECT phase, pg_typeof(phase)::text FROM ragfr_embedding_migration"
                                  " WHERE id = %s", (mid,)).fetchone()
            assert stored is not None and type(stored[0]) is str
            seen.append(stored)
            last = state.last_migration(conn)
            assert last is not None and last.phase is phase
        assert seen == [(p, "text") for p in ("index", "verify", "ready", "ready", "switched", "finalized")]
        with pytest.raises(MigrationStateError, match="cannot move to rolled_back from phase finalized"):
            state.set_phase(conn, mid, Phase.ROLLED_BACK)
        row = conn.execute("SELECT phase, finished_at IS NOT NULL, verified_at IS NOT NULL,"
                           " switched_at IS NOT NULL FROM ragfr_embedding_migration WHERE id = %s",
                           (mid,)).fetchone()
        assert row == ("finalized", True, True, True)
        assert state.last_migration(conn).as_dict()["phase"] == "finalized"  # type: ignore[union-attr]
