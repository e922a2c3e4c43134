"""Issue 48 item 6: a database that does not answer is `unavailable`, not `busy`.

The chat said the search was « saturée » (busy) while PostgreSQL was down: the pool waits the same for a
connection the server refuses as for one every search holds. The adapter now tells them apart (a fresh
connection is tried once the wait is over) and a connection lost in the middle of a search is unavailable too.
Real PostgreSQL (the shared test cluster) behind a relay this test cuts (tests/support/tcp_cut.py); the
adapter as Open WebUI calls it. The busy case (every connection held, the database answering) stays busy:
tests/owui/test_native_limits.py.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import psycopg
import pytest
from tests.conftest import MigratedDb
from tests.support.tcp_cut import relayed

from ragfr.owui.runtime import native
from ragfr.owui.runtime.errors import SearchUnavailable

from .test_native_limits import MODEL, _search


@pytest.fixture
def dsn(migrated_db: MigratedDb) -> Iterator[str]:
    dsn = migrated_db(4, MODEL)
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata, embedding_model)"
            " VALUES ('c1', '[1,0,1,0]', 'kb', 'Le sinistre se déclare vite.', '{}', %s)", (MODEL,))
    yield dsn
    for p in list(native._pools.values()):
        p.close()
    native._pools.clear()


def test_a_database_that_refuses_connections_is_unavailable_not_busy(dsn: str, monkeypatch) -> None:
    monkeypatch.setattr(native, "POOL_WAIT_S", 0.5)
    with relayed(dsn) as (through, relay):
        assert _search(through).ids[0] == ["c1"]  # answered through the relay first
        relay.cut()
        for p in list(native._pools.values()):  # the pool's idle connections died with the cut
            p.check()
        with pytest.raises(SearchUnavailable) as raised:
            _search(through)
    assert raised.value.kind == "unavailable", raised.value.reason
    assert "the database does not answer" in raised.value.reason and "refused" in raised.value.reason


def test_a_connection_lost_during_the_search_is_unavailable(dsn: str, monkeypatch) -> None:
    monkeypatch.setattr(native, "STATEMENT_TIMEOUT_MS", 60_000)
    failure: list[BaseException] = []

    def search() -> None:
        try:
            _search(dsn)
        except BaseException as err:  # handed to the test's thread
            failure.append(err)

    with psycopg.connect(dsn, autocommit=True) as admin, psycopg.connect(dsn) as blocker:
        blocker.execute("LOCK TABLE document_chunk IN ACCESS EXCLUSIVE MODE")  # the search waits on it
        searching = threading.Thread(target=search)
        searching.start()
        # The search's backend, waiting on the lock: terminated as a server shutdown or a failover does.
        waiting: list[int] = []
        for _ in range(600):
            waiting = [r[0] for r in admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'ragfr-owui-%%'"
                " AND wait_event_type = 'Lock' AND datname = current_database()").fetchall()]
            if waiting:
                break
            admin.execute("SELECT pg_sleep(0.1)")
        assert waiting, "the search never waited on the lock"
        # Every connection of the search (its arms run on two), until it returns: an arm may start waiting
        # after another's connection is gone.
        for _ in range(600):
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE"
                          " 'ragfr-owui-%%' AND datname = current_database()")
            searching.join(timeout=0.1)
            if not searching.is_alive():
                break
        blocker.rollback()
    assert len(failure) == 1 and isinstance(failure[0], SearchUnavailable), failure
    assert failure[0].kind == "unavailable", failure[0].reason
