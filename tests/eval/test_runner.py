"""`ragfr eval` end to end on the real golden set: real PostgreSQL with our pgvector build, production
ingestion, the real offline e5 embedder. Asserts properties of the run, never its scores."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from tests.support.paths import GOLDEN

from ragfr.cli import main
from ragfr.embed import load_embedder
from ragfr.eval.beir import load_dataset
from ragfr.eval.corpus import documents_ranking
from ragfr.eval.runner import run_eval

E5 = "local:multilingual-e5-small"


def test_document_rank_is_its_best_chunk() -> None:
    chunk_to_doc = {"c1": "A", "c2": "B", "c3": "A", "c4": "C"}
    assert documents_ranking(["c3", "x", "c2", "c1", "c4"], chunk_to_doc) == ["A", "B", "C"]


def test_bad_dataset_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--dsn", "postgresql://nobody@127.0.0.1:1/x", "--dataset", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip() == f"ragfr: error: {tmp_path / 'none'}: dataset directory not found"


@pytest.mark.slow
def test_golden_run_end_to_end(migrated_db: Callable[..., str], tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGFR_OWUI_VENV", str(tmp_path / "no-owui"))
    dsn = migrated_db(dims=384, model=E5)
    dataset = load_dataset(GOLDEN)
    embedder = load_embedder(E5)
    configs = ["bm25-whitespace", "pg-simple-and", "owui-native"]
    with psycopg.connect(dsn) as conn:
        first = run_eval(conn, dsn, dataset, embedder, configs=configs, progress=False)
        again = run_eval(conn, dsn, dataset, embedder, configs=configs, progress=False)
        stored = conn.execute(
            "SELECT count(DISTINCT vmetadata->>'doc_id'), count(*) FROM document_chunk WHERE collection_name = %s",
            (first.collection,),
        ).fetchone()
    assert stored == (len(dataset.corpus), first.ingest["chunks"])
    assert first.ingest["inserted"] == first.ingest["chunks"] >= len(dataset.corpus)
    # the same corpus, model and chunking reuse the collection: nothing re-embedded or rewritten
    assert again.collection == first.collection
    assert (again.ingest["inserted"], again.ingest["unchanged"]) == (0, first.ingest["chunks"])
    assert set(first.results) == {"bm25-whitespace", "pg-simple-and"}
    assert "no-owui" in first.skipped["owui-native"]
    for result in first.results.values():
        assert len(result.per_query) == len(dataset.queries)
        for query in dataset.queries.values():
            for doc in result.rankings[query.id]:
                meta = dataset.corpus[doc].metadata
                assert all(meta.get(k) == v for k, v in query.filters.items()), (result.name, query.id, doc)
    # Open WebUI's 'simple' AND keeps accents: the unaccented query matches no chunk at all
    assert first.results["pg-simple-and"].rankings["g02"] == []
    assert first.results["pg-simple-and"].rankings["g03"] != []


@pytest.mark.slow
def test_cli_json_and_per_query_file(migrated_db: Callable[..., str], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    dsn = migrated_db(dims=384, model=E5)
    out = tmp_path / "per-query.jsonl"
    argv = ["eval", "--dsn", dsn, "--dataset", str(GOLDEN), "--config", "bm25-whitespace", "--json",
            "--limit-queries", "20", "--seed", "3", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    metrics = document["configurations"]["bm25-whitespace"]
    assert set(metrics) == {"recall@1", "recall@5", "recall@10", "recall@50", "recall@100", "mrr@10", "ndcg@10"}
    assert document["queries"] == 20 and document["embedder"] == E5
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 20
    mean = sum(line["recall@10"] for line in lines) / 20
    assert metrics["recall@10"] == pytest.approx(mean, abs=1e-4)
    assert main(argv) == 0  # same seed, same sample
    assert [json.loads(line)["query_id"] for line in out.read_text().splitlines()] == [x["query_id"] for x in lines]
