"""The Open WebUI adapter's limits: connections bounded per process whatever the number of concurrent chat
searches; a search that cannot finish is cancelled at the statement timeout, and one that finds no free
connection gives up after the wait limit: both are `SearchUnavailable("busy")` (the chat's busy message),
never a hung request and never a None (Open WebUI's legacy path). A question ragfr will not search is
`refused`. Real PostgreSQL; the adapter as Open WebUI calls it."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from tests.conftest import MigratedDb

from ragfr.owui.runtime import native
from ragfr.owui.runtime.errors import SearchUnavailable

MODEL = "ollama:stub-geometry"


@dataclass
class _Result:  # the fields of Open WebUI's SearchResult the adapter fills
    ids: list[list[str]]
    documents: list[list[str]]
    metadatas: list[list[dict[str, Any]]]
    distances: list[list[float]]


class _Session:
    """Stand-in for Open WebUI's SQLAlchemy session: the adapter only reads its URL (SQLAlchemy is not
    installed in this venv; the real session is exercised by tests/owui/test_native.py)."""

    def __init__(self, dsn: str) -> None:
        self._url = SimpleNamespace(render_as_string=lambda hide_password: dsn)

    def get_bind(self) -> Any:
        return SimpleNamespace(url=self._url)


@pytest.fixture
def dsn(migrated_db: MigratedDb) -> Iterator[str]:
    dsn = migrated_db(4, MODEL)
    with psycopg.connect(dsn) as conn:
        for i in range(40):
            conn.execute(
                "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata, embedding_model)"
                " VALUES (%s, %s, 'kb', %s, '{}', %s)",
                (f"c{i:02d}", f"[{1 + i % 3},{i % 5},1,{i % 7}]", f"Le sinistre numéro {i} se déclare vite.", MODEL),
            )
    yield dsn
    for p in list(native._pools.values()):
        p.close()
    native._pools.clear()


def _search(dsn: str) -> Any:
    return native.hybrid_search(
        _Session(dsn), _Result, collection_name="kb", query="déclarer un sinistre", vectors=[[1.0, 0.5, 1.0, 0.2]],
        filter=None, limit=5, hybrid_bm25_weight=0.5, encrypted=False,
    )


def test_64_concurrent_searches_never_open_more_than_the_pools_allow(dsn: str, monkeypatch) -> None:
    monkeypatch.setattr(native, "POOL_SIZE", 3)
    results: list[Any] = []
    peak = [0]
    running = threading.Event()
    running.set()

    def watch() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while running.is_set():
                n = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'ragfr-owui-%'"
                                 " AND datname = current_database()").fetchone()[0]  # type: ignore[index]
                peak[0] = max(peak[0], n)
                time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    threads = [threading.Thread(target=lambda: results.append(_search(dsn))) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    running.clear()
    watcher.join()
    print(f"pool bound: 64 concurrent searches, pools of 3 (main + lexical): peak {peak[0]} connections")
    assert len(results) == 64 and all(r is not None and len(r.ids[0]) == 5 for r in results)
    assert 2 <= peak[0] <= 2 * 3, f"{peak[0]} connections for pools of 3 (main + lexical)"


def test_a_stuck_search_is_cancelled_at_the_timeout_and_said_busy(dsn: str, monkeypatch) -> None:
    monkeypatch.setattr(native, "STATEMENT_TIMEOUT_MS", 500)
    with psycopg.connect(dsn) as blocker:
        blocker.execute("LOCK TABLE document_chunk IN ACCESS EXCLUSIVE MODE")  # e.g. a migration gone wrong
        with pytest.raises(SearchUnavailable) as raised:  # never None: that would be the legacy path
            _search(dsn)
    # The server cancelled it at the 500 ms statement_timeout, as the reason reports (PostgreSQL's own cancel);
    # no clock around the call, which a busy machine stretches (issue 37 item 9).
    assert raised.value.kind == "busy" and "cancelled after statement_timeout 500 ms" in raised.value.reason


def test_no_free_connection_within_the_wait_is_busy_not_a_hang(dsn: str, monkeypatch) -> None:
    monkeypatch.setattr(native, "POOL_SIZE", 1)
    monkeypatch.setattr(native, "POOL_WAIT_S", 0.5)
    with native.pool(native.session_dsn(_Session(dsn)), "main").connection():  # the only connection, held
        with pytest.raises(SearchUnavailable) as raised:
            _search(dsn)
    # The pool's own 0.5 s wait ended it, as the reason reports; no clock around the call (issue 37 item 9).
    assert raised.value.kind == "busy" and "no database connection free within 0.5 s" in raised.value.reason


@pytest.mark.parametrize(("query", "why"), [
    ("sinistre " * 1000, "the limit is 8000"),
    ("déclarer\x00un sinistre", "NUL"),
    ("   ", "empty query"),
])
def test_a_question_ragfr_will_not_search_is_refused_not_sent_to_the_legacy_path(dsn: str, query: str,
                                                                                 why: str) -> None:
    with pytest.raises(SearchUnavailable) as raised:
        native.hybrid_search(
            _Session(dsn), _Result, collection_name="kb", query=query, vectors=[[1.0, 0.5, 1.0, 0.2]],
            filter=None, limit=5, hybrid_bm25_weight=0.5, encrypted=False)
    assert raised.value.kind == "refused" and why in raised.value.reason


def test_a_bad_filter_is_refused(dsn: str) -> None:
    with pytest.raises(SearchUnavailable) as raised:
        native.hybrid_search(
            _Session(dsn), _Result, collection_name="kb", query="sinistre", vectors=[[1.0, 0.5, 1.0, 0.2]],
            filter={"k\x00": "v"}, limit=5, hybrid_bm25_weight=0.5, encrypted=False)
    assert raised.value.kind == "refused" and "NUL" in raised.value.reason


def test_the_operators_ef_search_is_what_the_chat_search_pins_and_logs(dsn: str, monkeypatch, caplog) -> None:
    # RAGFR_EF_SEARCH is read once at import, like the other limits: an import in a fresh process proves it.
    env = {**os.environ, "RAGFR_EF_SEARCH": "150"}
    read = subprocess.run([sys.executable, "-c", "from ragfr.owui.runtime import native; print(native.EF_SEARCH)"],
                          env=env, capture_output=True, text=True, check=True)
    assert read.stdout.strip() == "150"
    for value, shown in (("auto", "None"), ("0", "ef_search must be 'auto' or an integer from 1 to 1000")):
        got = subprocess.run([sys.executable, "-c", "from ragfr.owui.runtime import native; print(native.EF_SEARCH)"],
                             env={**os.environ, "RAGFR_EF_SEARCH": value}, capture_output=True, text=True)
        assert shown in got.stdout + got.stderr, "auto is the size rule; a bad value stops the import, named"
    assert native.EF_SEARCH is None, "the default is auto, SearchConfig's (and the chart's openwebui-env.yaml)"
    monkeypatch.setattr(native, "EF_SEARCH", 150)
    with caplog.at_level(logging.INFO, logger="ragfr.search"):
        result = _search(dsn)
    assert result is not None and len(result.ids[0]) == 5
    logged = [json.loads(r.getMessage()) for r in caplog.records if r.getMessage().startswith('{"event": "search"')]
    assert logged and logged[-1]["settings"]["ef_search"] == 150  # SET LOCAL's value as the server returned it
