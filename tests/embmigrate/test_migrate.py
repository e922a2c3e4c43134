"""A complete migration on a real PostgreSQL with our pgvector build and the real offline models:
use-multilingual (512 dims) -> multilingual-e5-small (384 dims)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import psycopg
import pytest
from tests.support.embmigrate import N_CHUNKS, SOURCE, TARGET, owui_insert, snapshot

from ragfr.embed import load_embedder
from ragfr.embmigrate import runner, target
from ragfr.embmigrate.backfill import vector_literal
from ragfr.embmigrate.finalize import finalize
from ragfr.embmigrate.options import MigrateOptions


def _vec(text: str) -> np.ndarray:
    return np.array([float(x) for x in text.strip("[]").split(",")], dtype=np.float32)


def _expected(spec: str, texts: Sequence[str]) -> list[np.ndarray]:
    return [np.array(v, dtype=np.float32) for v in load_embedder(spec, cache=False).embed_passages(list(texts))]


def _opts(dsn: str, **kw: object) -> MigrateOptions:
    return MigrateOptions(dsn=dsn, to=TARGET, progress=False, **kw)  # type: ignore[arg-type]


def test_complete_migration_switches_every_chunk_to_the_new_model(source_db: Callable[[int], str]) -> None:
    dsn = source_db(N_CHUNKS)
    before = snapshot(dsn)
    messages: list[str] = []
    hook_saw: list[tuple[str, int, object]] = []
    # The on_switch hook (Open WebUI's reconfiguration in the cluster) runs only once the switch committed.
    on_switch = lambda model, dims: hook_saw.append((model, dims, snapshot(dsn)["space"]))  # noqa: E731
    assert runner.migrate(_opts(dsn, batch=8), messages.append, on_switch=on_switch) == 0
    after = snapshot(dsn)
    assert hook_saw == [(TARGET, 384, (TARGET, 384))]

    assert after["space"] == (TARGET, 384)
    cols = {name: typ for name, typ, _ in after["columns"]}
    assert cols["vector"] == "vector(384)" and cols["vector_prev"] == "vector(512)"
    # The live index's shape (migration 0011: half precision) is copied to the new space at ITS dimension,
    # under the name Open WebUI checks; the old space keeps its own.
    assert after["indexes"]["idx_document_chunk_vector"] == (
        "CREATE INDEX idx_document_chunk_vector ON public.document_chunk USING hnsw "
        "(((vector)::halfvec(384)) halfvec_cosine_ops) WITH (m='16', ef_construction='64')"
    )
    assert after["indexes"]["idx_document_chunk_vector_prev"] == (
        "CREATE INDEX idx_document_chunk_vector_prev ON public.document_chunk USING hnsw "
        "(((vector_prev)::halfvec(512)) halfvec_cosine_ops) WITH (m='16', ef_construction='64')"
    )
    ids = sorted(before["rows"])
    assert sorted(after["rows"]) == ids
    texts = [after["rows"][i][0] for i in ids]
    # Bit-for-bit what the model returns for the stored text (e5 is batch-invariant), under the new model id.
    for i, want in zip(ids, _expected(TARGET, texts), strict=True):
        text, vector, model, prev_vector, prev_model = after["rows"][i]
        assert np.array_equal(_vec(vector), want)
        assert model == TARGET and prev_model == SOURCE
        assert prev_vector == before["rows"][i][1]  # old vectors kept untouched
    assert after["state"] == [("switched", N_CHUNKS, 0)]
    # BM25 statistics are untouched by re-embedding.
    assert after["bm25"] == before["bm25"]
    assert any("recall@10 1.000" in m for m in messages), messages

    assert finalize(dsn, messages.append) == 0
    final = snapshot(dsn)
    assert final["extra_columns"] == []
    assert "idx_document_chunk_vector_prev" not in final["indexes"]
    assert final["state"] == [("finalized", N_CHUNKS, 0)]
    assert {i: r[1] for i, r in final["rows"].items()} == {i: r[1] for i, r in after["rows"].items()}


def test_search_answers_on_the_old_space_until_the_switch(source_db: Callable[[int], str]) -> None:
    dsn = source_db(12)
    before = snapshot(dsn)
    assert runner.migrate(_opts(dsn, no_switch=True), print) == 0
    ready = snapshot(dsn)
    assert ready["space"] == (SOURCE, 512) and ready["state"] == [("ready", 12, 0)]
    assert {i: r[:3] for i, r in ready["rows"].items()} == {i: r[:3] for i, r in before["rows"].items()}
    query = vector_literal(load_embedder(SOURCE, cache=False).embed_queries(["Que prépare la SNCF ?"])[0])
    # The nearest-neighbour query as ragfr's vector arm words it for the half-precision index (0011).
    knn = "SELECT id FROM document_chunk ORDER BY vector::halfvec(512) <=> %s::halfvec(512) LIMIT 3"
    with psycopg.connect(dsn) as conn:
        conn.execute("SET enable_seqscan = off")
        hits = conn.execute(knn, (query,)).fetchall()
        plan = conn.execute("EXPLAIN " + knn, (query,)).fetchall()
    assert len(hits) == 3
    assert "idx_document_chunk_vector" in str(plan)
    # Re-running the same command switches.
    assert runner.migrate(_opts(dsn), print) == 0
    assert snapshot(dsn)["space"] == (TARGET, 384)


class _WritesWhileEmbedding:
    """The real e5 embedder, plus Open WebUI-like writes from another connection on its 2nd call.

    Not a stub: every vector still comes from the model; the wrapper only chooses WHEN concurrent writes
    happen: between our read of a batch and our write of its vectors, the worst moment.
    """

    def __init__(self, dsn: str, batch_ids: list[str]) -> None:
        self.inner = load_embedder(TARGET, cache=False)
        self.model_id = self.inner.model_id
        self.dsn = dsn
        self.calls = 0
        self.batch_ids = batch_ids

    @property
    def dims(self) -> int:
        return self.inner.dims

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        out = self.inner.embed_passages(texts)
        if self.calls == 2:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                owui_insert(conn, [("chunk-new-a", "Un document ajouté pendant la migration.")])
                conn.execute("UPDATE document_chunk SET text = 'Texte modifié en cours de lot.' WHERE id = %s",
                             (self.batch_ids[1],))  # in the batch being embedded right now
                conn.execute("UPDATE document_chunk SET text = 'Texte modifié après son lot.' WHERE id = %s",
                             (self.batch_ids[0],))  # already migrated in batch 1
                conn.execute("DELETE FROM document_chunk WHERE id = %s", (self.batch_ids[2],))
        return out


def test_rows_written_during_the_migration_end_up_in_the_new_space(
    source_db: Callable[[int], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = source_db(20)
    # batch 8: call 1 is the dimension probe, call 2 embeds chunk-0000..0007.
    spy = _WritesWhileEmbedding(dsn, ["chunk-0000", "chunk-0003", "chunk-0015"])
    monkeypatch.setattr(target, "load_target", lambda spec, dims, batch: (spy, 384))
    assert runner.migrate(_opts(dsn, batch=8, no_switch=True), print) == 0
    # Written after verification, before the switch: caught up by the switch.
    with psycopg.connect(dsn, autocommit=True) as conn:
        owui_insert(conn, [("chunk-new-b", "Un document ajouté juste avant la bascule.")])
    assert runner.migrate(_opts(dsn, batch=8), print) == 0

    after = snapshot(dsn)
    ids = sorted(after["rows"])
    assert "chunk-0015" not in ids and {"chunk-new-a", "chunk-new-b"} <= set(ids)
    assert len(ids) == 20 - 1 + 2
    texts = [after["rows"][i][0] for i in ids]
    assert after["rows"]["chunk-0000"][0] == "Texte modifié après son lot."
    assert after["rows"]["chunk-0003"][0] == "Texte modifié en cours de lot."
    for i, want in zip(ids, _expected(TARGET, texts), strict=True):
        assert np.array_equal(_vec(after["rows"][i][1]), want), i
        assert after["rows"][i][2] == TARGET
