"""Rollback restores the old embedding space exactly: the same column (same attribute, type, position),
index, triggers, space row and, for every chunk that existed, the very same vector bytes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import psycopg
from tests.support.embmigrate import SOURCE, TARGET, owui_insert, snapshot

from ragfr.cli.embeddings import format_status
from ragfr.embed import load_embedder
from ragfr.embmigrate import runner
from ragfr.embmigrate.options import MigrateOptions
from ragfr.embmigrate.rollback import rollback
from ragfr.embmigrate.state import Phase
from ragfr.embmigrate.status import status


def _opts(dsn: str, **kw: bool) -> MigrateOptions:
    return MigrateOptions(dsn=dsn, to=TARGET, batch=8, progress=False, **kw)


def _vec(text: str) -> np.ndarray:
    return np.array([float(x) for x in text.strip("[]").split(",")], dtype=np.float32)


def test_rollback_after_the_switch_restores_the_old_space_exactly(source_db: Callable[[int], str]) -> None:
    dsn = source_db(16)
    before = snapshot(dsn)
    assert runner.migrate(_opts(dsn), print) == 0
    # Open WebUI, restarted on the new model, writes in the new space only.
    with psycopg.connect(dsn, autocommit=True) as conn:
        owui_insert(conn, [("chunk-after", "Un document écrit après la bascule.")], spec=TARGET)
        conn.execute("UPDATE document_chunk SET text = 'Texte réécrit après la bascule.' WHERE id = 'chunk-0004'")
        conn.execute("DELETE FROM document_chunk WHERE id = 'chunk-0009'")
    messages: list[str] = []
    assert rollback(dsn, messages.append, batch=8, progress=False) == 0
    after = snapshot(dsn)

    for key in ("columns", "indexes", "triggers", "space", "extra_columns"):
        assert after[key] == before[key], key
    untouched = set(before["rows"]) - {"chunk-0004", "chunk-0009"}
    for chunk_id in untouched:
        assert after["rows"][chunk_id] == before["rows"][chunk_id], chunk_id
    assert "chunk-0009" not in after["rows"]
    # Rows the old space never had are embedded with the old model (USE is not batch-invariant: ~1e-7).
    use = load_embedder(SOURCE, cache=False)
    for chunk_id in ("chunk-after", "chunk-0004"):
        text, vector, model = after["rows"][chunk_id]
        assert model == SOURCE
        np.testing.assert_allclose(_vec(vector), use.embed_passages([text])[0], atol=1e-6)
    assert after["state"] == [("rolled_back", 16, 2)]


def test_rollback_before_the_switch_drops_the_shadow_and_nothing_else(source_db: Callable[[int], str]) -> None:
    dsn = source_db(8)
    before = snapshot(dsn)
    assert runner.migrate(_opts(dsn, no_switch=True), print) == 0
    assert snapshot(dsn)["extra_columns"] == ["vector_next", "embedding_model_next"]
    assert rollback(dsn, print, progress=False) == 0
    after = snapshot(dsn)
    assert {k: v for k, v in after.items() if k != "state"} == {k: v for k, v in before.items() if k != "state"}
    assert after["state"] == [("rolled_back", 8, 0)]
    # A new migration can start afresh after a rollback.
    assert runner.migrate(_opts(dsn), print) == 0
    assert snapshot(dsn)["space"] == (TARGET, 384)


def test_status_counts_the_migrations_batches_not_the_rollbacks(source_db: Callable[[int], str]) -> None:
    """Issue 28 item 5: `status` showed the rollback's re-embedding batches as the migration's."""
    dsn = source_db(16)
    assert runner.migrate(_opts(dsn), print) == 0
    switched = status(dsn).migration
    assert switched is not None and (switched.rows_embedded, switched.batches) == (16, 2)  # --batch 8
    with psycopg.connect(dsn, autocommit=True) as conn:
        owui_insert(conn, [("chunk-after-1", "Premier document écrit après la bascule."),
                           ("chunk-after-2", "Second document écrit après la bascule.")], spec=TARGET)
    assert rollback(dsn, print, batch=1, progress=False) == 0  # two batches of the old model
    done = status(dsn).migration
    assert done is not None and done.phase is Phase.ROLLED_BACK
    assert (done.rows_embedded, done.batches, done.rows_reembedded_old) == (16, 2, 2)
    assert "  rows embedded 16 in 2 batch(es); re-embedded for the old space 2" in format_status(
        status(dsn)).splitlines()
