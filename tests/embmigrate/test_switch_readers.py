"""The switch never blocks searches for longer than the renames: late rows are embedded while only writers
wait (SHARE lock), and ACCESS EXCLUSIVE is taken just for the swap."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import psycopg
import pytest
from tests.support.embmigrate import TARGET, owui_insert, snapshot

from ragfr.embed import load_embedder
from ragfr.embmigrate import runner, swap, target
from ragfr.embmigrate.options import MigrateOptions

LATE_A = "Un avenant ajouté après la vérification."
LATE_B = "Une clause ajoutée pendant le rattrapage."
# Searches the reader must finish while the late row is embedded under the switch's lock. A hang guard bounds the
# wait for them; no duration is asserted (issue 37 item 9): a busy machine stretches every one.
SEARCHES_DURING = 5
HANG_GUARD_S = 120.0


class _Searches:
    """Open WebUI's reader: the same query again and again on its own connection, counting those that finished."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.done = 0
        self.changed = threading.Condition()
        self.stop = threading.Event()
        self.pid = 0

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            self.pid = conn.info.backend_pid
            while not self.stop.is_set():
                conn.execute("SELECT id FROM document_chunk ORDER BY id LIMIT 5").fetchall()
                with self.changed:
                    self.done += 1
                    self.changed.notify_all()
                time.sleep(0.02)

    def wait_for_more(self, more: int) -> int:
        """Waits until `more` further searches finished (or the hang guard); returns how many did."""
        with self.changed:
            target = self.done + more
            self.changed.wait_for(lambda: self.done >= target, timeout=HANG_GUARD_S)
            return self.done - (target - more)


class _LateModel:
    """Real e5 vectors; while it embeds LATE_B (which only the switch's locked catch-up can embed), it looks at
    the locks held on document_chunk and lets the reader run SEARCHES_DURING searches: what a busy Ollama's
    seconds would let Open WebUI do."""

    def __init__(self, dsn: str, searches: _Searches, events: list[str]) -> None:
        self.inner = load_embedder(TARGET, cache=False)
        self.model_id = self.inner.model_id
        self.dsn, self.searches, self.events = dsn, searches, events
        self.modes: set[str] = set()
        self.searched = 0

    @property
    def dims(self) -> int:
        return self.inner.dims

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        if LATE_B in texts:
            self.events.append("embed late row")
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                self.modes = {r[0] for r in conn.execute(
                    "SELECT mode FROM pg_locks WHERE locktype = 'relation' AND granted"
                    " AND relation = 'document_chunk'::regclass AND pid NOT IN (pg_backend_pid(), %s)"
                    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                    (self.searches.pid,))}
            self.searched = self.searches.wait_for_more(SEARCHES_DURING)
        return self.inner.embed_passages(texts)


def _write_just_before_the_switch_locks(monkeypatch: pytest.MonkeyPatch, dsn: str, events: list[str]) -> None:
    """Open WebUI writes LATE_B in the last moment before the switch takes its first lock: after every
    unlocked catch-up, so only the locked one can embed it. (Only the timing is arranged; the lock
    functions themselves run unchanged.) Each lock taken is recorded in `events`."""
    wrote: list[bool] = []
    for name in ("lock_writers", "lock_table"):
        real = getattr(swap, name, None)
        if real is None:
            continue

        def first_lock(conn: psycopg.Connection, real: Callable[[psycopg.Connection], None] = real,
                       name: str = name) -> None:
            if not wrote:
                with psycopg.connect(dsn, autocommit=True) as other:
                    owui_insert(other, [("late-b", LATE_B)])
                wrote.append(True)
            real(conn)
            events.append(name)

        monkeypatch.setattr(swap, name, first_lock)


def test_searches_go_on_while_late_rows_are_embedded_at_the_switch(
    source_db: Callable[[int], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = source_db(12)
    events: list[str] = []
    reader = _Searches(dsn)
    model = _LateModel(dsn, reader, events)
    monkeypatch.setattr(target, "load_target", lambda spec, dims, batch: (model, 384))
    opts = dict(dsn=dsn, to=TARGET, progress=False, batch=8)
    assert runner.migrate(MigrateOptions(**opts, no_switch=True), print) == 0  # type: ignore[arg-type]
    with psycopg.connect(dsn, autocommit=True) as conn:
        owui_insert(conn, [("late-a", LATE_A)])  # caught up before any lock
    _write_just_before_the_switch_locks(monkeypatch, dsn, events)

    thread = threading.Thread(target=reader.run)
    thread.start()
    try:
        reader.wait_for_more(1)  # connected and searching
        assert runner.migrate(MigrateOptions(**opts), print) == 0  # type: ignore[arg-type]
    finally:
        reader.stop.set()
        thread.join()
    after = snapshot(dsn)
    assert after["space"] == (TARGET, 384) and after["rows"]["late-b"][2] == TARGET  # embedded under the lock
    print(f"switch: {events}; locks held while the late row was embedded: {sorted(model.modes)}; "
          f"{model.searched} searches meanwhile, {reader.done} in all")
    # Conditions, not durations: the late row is embedded under the writers' SHARE lock, which searches pass
    # (they finished meanwhile; blocked, they would never have, and the hang guard would end the wait short of
    # them), and ACCESS EXCLUSIVE comes only after it, for the renames.
    assert events[:1] == ["lock_writers"] and events.index("embed late row") < events.index("lock_table"), events
    assert "ShareLock" in model.modes and "AccessExclusiveLock" not in model.modes, model.modes
    assert model.searched >= SEARCHES_DURING, f"only {model.searched} searches finished while the late row was embedded"
