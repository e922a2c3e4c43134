"""The migration's phases and moves are one table (state.TRANSITIONS): the schema's CHECK lists the same
phases, the derived groups follow from it, and set_phase refuses any move it does not list, changing nothing."""

from __future__ import annotations

import re
from collections.abc import Callable

import psycopg
import pytest
from tests.support.paths import REPO

from ragfr.embmigrate import state
from ragfr.embmigrate.errors import MigrationStateError


def test_the_schema_check_lists_exactly_the_phases() -> None:
    sql = (REPO / "migrations" / "0100_embedding_migration.sql").read_text(encoding="utf-8")
    check = re.search(r"phase text NOT NULL CHECK \(phase IN \(([^)]*)\)\)", sql)
    assert check is not None
    assert tuple(re.findall(r"'([a-z_]+)'", check.group(1))) == state.PHASES == tuple(state.TRANSITIONS)


def test_groups_are_read_from_the_table() -> None:
    assert state.OPEN_PHASES == ("backfill", "index", "verify", "ready", "switched")
    assert state.BEFORE_SWITCH == ("backfill", "index", "verify", "ready")
    terminal = [p for p in state.PHASES if not state.TRANSITIONS[p]]
    assert terminal == ["rolled_back", "finalized"]
    # Every open phase can be rolled back; only the switch leads to finalize.
    assert all("rolled_back" in state.TRANSITIONS[p] for p in state.OPEN_PHASES)
    assert [p for p in state.PHASES if "finalized" in state.TRANSITIONS[p]] == ["switched"]


def test_set_phase_follows_the_table_and_refuses_the_rest(source_db: Callable[[int], str]) -> None:
    dsn = source_db(2)
    with psycopg.connect(dsn, autocommit=True) as conn:
        mid = state.create(conn, "local:use-multilingual", 512, "local:multilingual-e5-small", 384)
        for wrong in ("switched", "finalized", "verify"):
            with pytest.raises(MigrationStateError, match=f"cannot move to {wrong} from phase backfill"):
                state.set_phase(conn, mid, wrong)
        for phase in ("index", "verify", "ready", "ready", "switched", "finalized"):
            state.set_phase(conn, mid, phase)
        with pytest.raises(MigrationStateError, match="cannot move to rolled_back from phase finalized"):
            state.set_phase(conn, mid, "rolled_back")
        row = conn.execute("SELECT phase, finished_at IS NOT NULL FROM ragfr_embedding_migration WHERE id = %s",
                           (mid,)).fetchone()
        assert row == ("finalized", True)
