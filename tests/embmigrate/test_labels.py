"""The model a chunk's vmetadata.embedding_config names follows its vector (issue 28 item 5): the new model
after the switch and finalize (what `ragfr search --json` shows), the old one again after a rollback; labels
of another engine or model, and every other metadata key, are left as they were."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from tests.support.embmigrate import SOURCE, TARGET, owui_insert, run_cli

from ragfr import stop
from ragfr.cli import main as cli_main
from ragfr.embmigrate import labels, runner
from ragfr.embmigrate.errors import MigrationStateError
from ragfr.embmigrate.finalize import finalize
from ragfr.embmigrate.options import MigrateOptions
from ragfr.embmigrate.rollback import rollback
from ragfr.embmigrate.state import Phase
from ragfr.embmigrate.status import status

OTHER = {"engine": "openai", "model": "text-embedding-3-small"}  # a label no migration of ours wrote


def _opts(dsn: str) -> MigrateOptions:
    return MigrateOptions(dsn=dsn, to=TARGET, batch=8, progress=False)


def _label_rows(dsn: str, model: str) -> None:
    """Label every chunk as ragfr ingest does, except chunk-0010 (another engine) and chunk-0011 (none)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE document_chunk SET vmetadata = jsonb_build_object('source', id || '.txt', 'page', 3,"
            " 'embedding_config', jsonb_build_object('engine', 'ragfr', 'model', %s::text))",
            (model,),
        )
        conn.execute("UPDATE document_chunk SET vmetadata = jsonb_build_object('source', 'x.txt',"
                     " 'embedding_config', %s::jsonb) WHERE id = 'chunk-0010'", (json.dumps(OTHER),))
        conn.execute("UPDATE document_chunk SET vmetadata = '{\"source\": \"y.txt\"}' WHERE id = 'chunk-0011'")


def _metadata(dsn: str) -> dict[str, dict[str, Any]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {str(r[0]): r[1] for r in conn.execute("SELECT id, vmetadata FROM document_chunk")}


def _expect(meta: dict[str, dict[str, Any]], model: str) -> None:
    for chunk_id, m in meta.items():
        if chunk_id == "chunk-0010":
            assert m == {"source": "x.txt", "embedding_config": OTHER}
        elif chunk_id == "chunk-0011":
            assert m == {"source": "y.txt"}
        else:
            assert m == {"source": f"{chunk_id}.txt", "page": 3,
                         "embedding_config": {"engine": "ragfr", "model": model}}, chunk_id


def _searched_models(dsn: str, capsys: pytest.CaptureFixture[str]) -> set[str]:
    capsys.readouterr()
    rc = cli_main(["search", "--dsn", dsn, "--collection", "kb-1", "--no-rerank", "--lexical-only", "-k", "5",
                   "--json", "Louvre exposition"])
    out = capsys.readouterr().out
    assert rc == 0, out
    results = json.loads(out)["results"]
    assert results
    return {h["metadata"]["embedding_config"]["model"] for h in results if "embedding_config" in h["metadata"]}


def test_switch_and_finalize_name_the_new_model(
    source_db: Callable[[int], str], capsys: pytest.CaptureFixture[str]
) -> None:
    dsn = source_db(14)
    _label_rows(dsn, SOURCE)
    messages: list[str] = []
    assert runner.migrate(_opts(dsn), messages.append) == 0
    assert f"vmetadata.embedding_config of 12 chunk(s) now names {TARGET}" in messages
    _expect(_metadata(dsn), TARGET)
    assert _searched_models(dsn, capsys) == {TARGET}
    assert finalize(dsn, messages.append) == 0
    _expect(_metadata(dsn), TARGET)
    assert _searched_models(dsn, capsys) == {TARGET}


def test_rollback_names_the_old_model_again_and_its_rerun_finishes_the_labels(
    source_db: Callable[[int], str], capsys: pytest.CaptureFixture[str]
) -> None:
    dsn = source_db(14)
    _label_rows(dsn, SOURCE)
    assert runner.migrate(_opts(dsn), print) == 0
    # A chunk written after the switch, labelled with the new model by its writer.
    with psycopg.connect(dsn, autocommit=True) as conn:
        owui_insert(conn, [("chunk-after", "Le musée du Louvre présente une exposition d'hiver.")], spec=TARGET)
        conn.execute("UPDATE document_chunk SET vmetadata = jsonb_build_object('source', 'chunk-after.txt',"
                     " 'page', 3, 'embedding_config', jsonb_build_object('engine', 'ragfr', 'model', %s::text))"
                     " WHERE id = 'chunk-after'", (TARGET,))
    assert rollback(dsn, print, batch=8, progress=False) == 0
    meta = _metadata(dsn)
    assert "chunk-after" in meta
    _expect(meta, SOURCE)
    assert _searched_models(dsn, capsys) == {SOURCE}

    # As if the rollback had been stopped while rewriting the labels: running it again finishes them.
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE document_chunk SET vmetadata = jsonb_set(vmetadata, '{embedding_config,model}',"
                     " to_jsonb(%s::text)) WHERE id IN ('chunk-0001', 'chunk-0007')", (TARGET,))
    messages: list[str] = []
    assert rollback(dsn, messages.append, progress=False) == 0
    assert messages == [f"vmetadata.embedding_config of 2 chunk(s) now names {SOURCE}",
                        "migration #1 was already rolled back; its labels are now done"]
    _expect(_metadata(dsn), SOURCE)
    # Nothing left to do: the usual refusal.
    with pytest.raises(MigrationStateError, match="no embedding migration is open"):
        rollback(dsn, print, progress=False)


def test_relabel_walks_batches_and_rewrites_only_rows_whose_vector_is_the_new_model(
    source_db: Callable[[int], str],
) -> None:
    dsn = source_db(12)
    old = "local:multilingual-e5-small"
    _label_rows(dsn, old)
    with psycopg.connect(dsn, autocommit=True) as conn:
        # A row without a vector is not of the new model: its label stays.
        conn.execute("UPDATE document_chunk SET vector = NULL WHERE id = 'chunk-0002'")
        assert labels.relabel(conn, old, SOURCE, batch=3) == 9
        assert labels.relabel(conn, old, SOURCE, batch=3) == 0
    meta = _metadata(dsn)
    assert meta.pop("chunk-0002")["embedding_config"]["model"] == old
    _expect(meta, SOURCE)


def test_open_webui_labels_follow_only_between_ollama_models() -> None:
    assert labels.rewrites("ollama:bge-m3:567m", "ollama:nomic-embed-text") == [
        labels.Rewrite("ragfr", "ollama:bge-m3:567m", "ollama:nomic-embed-text"),
        labels.Rewrite("ollama", "bge-m3:567m", "nomic-embed-text"),
    ]
    assert labels.rewrites("ollama:bge-m3:567m", TARGET) == [labels.Rewrite("ragfr", "ollama:bge-m3:567m", TARGET)]


def test_open_webui_labels_are_rewritten_in_place(source_db: Callable[[int], str]) -> None:
    dsn = source_db(4)
    old, new = "ollama:bge-m3:567m", "ollama:nomic-embed-text"
    with psycopg.connect(dsn, autocommit=True) as conn:
        # The database as an ollama -> ollama switch leaves it (same width, so the stored vectors do).
        conn.execute("UPDATE ragfr_embedding_space SET model = %s", (new,))
        conn.execute("UPDATE document_chunk SET embedding_model = %s", (new,))
        conn.execute("UPDATE document_chunk SET vmetadata = '{\"file_id\": \"f1\", \"embedding_config\":"
                     " {\"engine\": \"ollama\", \"model\": \"bge-m3:567m\"}}'")
        assert labels.relabel(conn, old, new) == 4
        stored = [r[0] for r in conn.execute("SELECT vmetadata FROM document_chunk")]
    assert stored == [{"file_id": "f1", "embedding_config": {"engine": "ollama", "model": "nomic-embed-text"}}] * 4


def test_a_migrate_killed_while_relabelling_is_finished_by_the_same_command(
    source_db: Callable[[int], str],
) -> None:
    dsn = source_db(12)
    _label_rows(dsn, SOURCE)
    argv = ["embeddings", "migrate", "--dsn", dsn, "--to", TARGET, "--batch", "8", "--no-progress"]
    killed = run_cli(argv, env={"RAGFR_EMBMIGRATE_KILL_AT": "relabel-before-commit"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    # Switched, labels still the old model's: the batch in flight left no trace.
    assert {m["embedding_config"]["model"] for m in _metadata(dsn).values() if m["source"] != "y.txt"} == {
        SOURCE, OTHER["model"]}
    again = run_cli(argv)
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines()[-1] == f"vmetadata.embedding_config of 10 chunk(s) now names {TARGET}"
    _expect(_metadata(dsn), TARGET)


def test_a_stop_while_relabelling_says_the_switch_is_done_and_how_to_finish(
    source_db: Callable[[int], str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    dsn = source_db(4)

    def stopped(*_args: object, **_kw: object) -> int:
        raise stop.Stopped(signal.SIGTERM)

    monkeypatch.setattr(labels, "relabel", stopped)
    with pytest.raises(stop.Stopped) as info:
        runner.migrate(_opts(dsn), print)
    assert str(info.value) == (
        f"SIGTERM: migration #1: document_chunk.vector is {TARGET}; stopped while rewriting the model named in "
        f"vmetadata.embedding_config (chunks rewritten so far are kept, the others still name {SOURCE}). "
        f"Finish with `ragfr embeddings migrate --to {TARGET} --batch 8`"
    )
    assert status(dsn).migration.phase is Phase.SWITCHED  # type: ignore[union-attr]
