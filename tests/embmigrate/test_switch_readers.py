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
SLOW_S = 3.0


class _SlowModel:
    """Real e5 vectors; embedding LATE_B takes SLOW_S, as a busy Ollama would."""

    def __init__(self) -> None:
        self.inner = load_embedder(TARGET, cache=False)
        self.model_id = self.inner.model_id

    @property
    def dims(self) -> int:
        return self.inner.dims

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        if LATE_B in texts:
            time.sleep(SLOW_S)
        return self.inner.embed_passages(texts)


def _write_just_before_the_switch_locks(monkeypatch: pytest.MonkeyPatch, dsn: str) -> None:
    """Open WebUI writes LATE_B in the last moment before the switch takes its first lock: after every
    unlocked catch-up, so only the locked one can embed it. (Only the timing is arranged; the lock
    functions themselves run unchanged.)"""
    wrote: list[bool] = []
    for name in ("lock_writers", "lock_table"):
        real = getattr(swap, name, None)
        if real is None:
            continue

        def first_lock(conn: psycopg.Connection, real: Callable[[psycopg.Connection], None] = real) -> None:
            if not wrote:
                with psycopg.connect(dsn, autocommit=True) as other:
                    owui_insert(other, [("late-b", LATE_B)])
                wrote.append(True)
            real(conn)

        monkeypatch.setattr(swap, name, first_lock)


def test_searches_go_on_while_late_rows_are_embedded_at_the_switch(
    source_db: Callable[[int], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = source_db(12)
    model = _SlowModel()
    monkeypatch.setattr(target, "load_target", lambda spec, dims, batch: (model, 384))
    opts = dict(dsn=dsn, to=TARGET, progress=False, batch=8)
    assert runner.migrate(MigrateOptions(**opts, no_switch=True), print) == 0  # type: ignore[arg-type]
    with psycopg.connect(dsn, autocommit=True) as conn:
        owui_insert(conn, [("late-a", LATE_A)])  # caught up before any lock
    _write_just_before_the_switch_locks(monkeypatch, dsn)

    waits: list[float] = []
    done = threading.Event()

    def searches() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while not done.is_set():
                started = time.monotonic()
                conn.execute("SELECT id FROM document_chunk ORDER BY id LIMIT 5").fetchall()
                waits.append(time.monotonic() - started)
                time.sleep(0.02)

    reader = threading.Thread(target=searches)
    reader.start()
    started = time.monotonic()
    try:
        assert runner.migrate(MigrateOptions(**opts), print) == 0  # type: ignore[arg-type]
    finally:
        switch_s = time.monotonic() - started
        done.set()
        reader.join()
    after = snapshot(dsn)
    assert after["space"] == (TARGET, 384) and after["rows"]["late-b"][2] == TARGET  # embedded under the lock
    print(f"switch {switch_s:.1f} s; {len(waits)} searches, longest wait {max(waits) * 1000:.0f} ms")
    assert switch_s >= SLOW_S and len(waits) > 20
    assert max(waits) < 1.0, f"a search waited {max(waits):.2f} s during a {switch_s:.1f} s switch"
