"""Tiny-scale runs of the retrieval-core benchmark harness (`make bench`), so it cannot rot unnoticed.

Real PostgreSQL (our pgvector build) and the real ragfr retrieval code; the corpus is the harness's own
(PIAF texts, random vectors) at 1000 rows and 16 dims so everything runs in seconds. Timings are
NOT asserted (they belong to the benchmark); structure, counts and recall arithmetic are.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import psycopg
import pytest
from tests.support.paths import PIAF_JSON

from ragfr.errors import ConfigError
from ragfr_tools.bench import __main__ as bench_main
from ragfr_tools.bench import latency, owui, report, store
from ragfr_tools.bench.corpus import CorpusSpec, Geometry, block_vectors, chunks, read_piaf, selectivity_labels

pytestmark = pytest.mark.skipif(not PIAF_JSON.is_file(), reason=f"PIAF not found at {PIAF_JSON}: bench smoke skipped")


@pytest.fixture(scope="module")
def piaf():
    return read_piaf(PIAF_JSON)


def test_selectivity_classes_are_exact_and_disjoint(piaf) -> None:
    spec = CorpusSpec(rows=20_000, dims=16, piaf_sha256=piaf.sha256)
    labels = selectivity_labels(spec)
    counts = {name: int((labels == name).sum()) for name in ("p0.1", "p1", "p10", "rest")}
    assert counts == {"p0.1": 20, "p1": 200, "p10": 2000, "rest": 17_780}


def test_generator_is_deterministic_and_keyed(piaf) -> None:
    a = CorpusSpec(rows=1000, dims=16, piaf_sha256=piaf.sha256)
    first = [c.text for c in chunks(a, piaf)][:50]
    assert first == [c.text for c in chunks(a, piaf)][:50]
    assert all(400 <= len(t) <= 1000 for t in first), "chunk lengths follow the drawn 400-1000 character targets"
    assert len(set(first)) == len(first)
    assert np.array_equal(block_vectors(a, 0), block_vectors(a, 0))
    other = CorpusSpec(rows=1000, dims=16, seed=a.seed + 1, piaf_sha256=piaf.sha256)
    assert other.key() != a.key() and store.database_name(other) != store.database_name(a)
    assert CorpusSpec(rows=1000, dims=16, geometry=Geometry.LOWRANK).key() != CorpusSpec(rows=1000, dims=16).key()


def test_vector_geometries(piaf) -> None:
    uniform = block_vectors(CorpusSpec(rows=1000, dims=64), 0)
    lowrank = block_vectors(CorpusSpec(rows=1000, dims=64, geometry=Geometry.LOWRANK), 0)
    for x in (uniform, lowrank):
        assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    # Share of the energy in the top 32 singular directions: ~all of it for lowrank, ~half for uniform.
    def top32(x: np.ndarray) -> float:
        s = np.linalg.svd(x, compute_uv=False) ** 2
        return float(s[:32].sum() / s.sum())
    assert top32(lowrank) > 0.9 > 0.7 > top32(uniform)


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ConfigError, match="multiple of 1000"):
        CorpusSpec(rows=1500)
    for bad in ("ten", "1500", "0"):
        with pytest.raises(SystemExit):
            bench_main.parser().parse_args(["--sizes", bad])


def test_cache_reuses_a_finished_load_and_redoes_an_interrupted_one(pg_dsn: str, piaf) -> None:
    spec = CorpusSpec(rows=1000, dims=16, seed=7, piaf_sha256=piaf.sha256)
    name = store.database_name(spec)
    store.drop(pg_dsn, name)
    try:
        first = store.ensure_corpus(pg_dsn, spec, piaf, say=lambda _m: None)
        assert not first.cached
        assert first.load["class_sizes"] == {"p0.1": 1, "p1": 10, "p10": 100, "rest": 889}
        again = store.ensure_corpus(pg_dsn, spec, piaf, say=lambda _m: None)
        assert again.cached and again.load == first.load
        with psycopg.connect(first.dsn, autocommit=True) as conn:
            # Same indexes as the migrations define (rebuilt after the load) plus Open WebUI's 'simple' GIN.
            names = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'document_chunk'")}
            assert {"idx_document_chunk_vector", "idx_document_chunk_fts", "idx_document_chunk_text_search"} <= names
            stats = conn.execute("SELECT n_docs FROM ragfr_collection_stats WHERE collection_name = 'bench'").fetchone()
            assert stats == (1000,), "the BM25 statistics triggers ran during the COPY"
            conn.execute("DELETE FROM ragfr_bench_meta")  # as if the load had died before its last step
        redone = store.ensure_corpus(pg_dsn, spec, piaf, say=lambda _m: None)
        assert not redone.cached
    finally:
        store.drop(pg_dsn, name)


def test_owui_fusion_weights_like_merge_hybrid_search_results() -> None:
    # 0.5/(60+1) for each arm's first: an id first in both arms outranks everything; ties keep vector order.
    assert owui.merge(["a", "b"], ["b", "c"], 10) == ["b", "a", "c"]
    assert owui.merge(["a", "b"], [], 1) == ["a"]


def test_tiny_end_to_end_run(pg_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    code = bench_main.main([
        "--dsn", pg_dsn, "--sizes", "1000", "--dims", "16", "--geometry", "lowrank", "--queries", "12",
        "--recall-queries", "12", "--ef", "10,1000", "--legacy-queries", "2", "--seed", "11", "--no-reuse",
        "--drop", "--out", str(out), "--filter-index", "p10", "--clients", "1,2", "--throughput-seconds", "0.5",
    ])
    assert code == 0
    raw = out.read_text()
    password = urlsplit(pg_dsn).password
    assert pg_dsn not in raw and (not password or password not in raw), "the committed JSON must not carry the DSN"
    result = json.loads(raw)
    assert result["command"].startswith("python -m ragfr_tools.bench --dsn $DSN --sizes 1000")
    size = result["sizes"]["1000"]
    cases = size["latency"]["cases"]
    assert len(cases) == len(latency.ragfr_cases()) + 1  # + Open WebUI native
    for name, case in cases.items():
        lat = case["latency_ms"]
        assert lat["n"] == 12 and 0 < lat["min"] <= lat["p50"] <= lat["p95"] <= lat["max"], name
    for sel, passing in (("p0.1", 1), ("p1", 10), ("p10", 100)):
        case = next(c for n, c in cases.items() if f"sel={sel} " in n)
        assert case["passing_rows"] == passing
        assert case["target_met"] and case["off_filter_hits"] == 0 and case["underfilled"] == 0
    assert cases["ragfr hybrid, filter sel=p0.1 (0.1 %)"]["mean_hits"] == 1
    # --filter-index p10: the class has its own graph. The whole corpus (1,000 rows) is one collection under
    # collection_exact_rows, so the product scores it exactly and walks no graph: the bench reports that scope
    # (walking a declared graph is tests/retrieval/test_filter_index.py's, with the rule off).
    (declared,) = size["filter_indexes"]["indexes"]
    assert (declared["filter"], declared["state"], declared["rows"]) == ("sel=p10", "ready", 100)
    p10 = next(c for n, c in cases.items() if "sel=p10 " in n)
    assert p10["filter_index"] == [] and p10["vector_scope"] == ["collections"]
    both = (cases["ragfr hybrid (no rerank)"], cases["ragfr hybrid, arms one after the other (one connection)"])
    assert all(c["returned_k"] == 12 and "lexical_arm_ms" in c and "semantic_arm_ms" in c for c in both)
    thru = size["throughput"]
    assert [lv["clients"] for lv in thru["ragfr"]] == [lv["clients"] for lv in thru["owui_native"]] == [1, 2]
    for lv in thru["ragfr"] + thru["owui_native"]:
        assert lv["errors"] == 0 and lv["searches"] > 0 and lv["searches_per_s"] > 0, lv
    assert isinstance(thru["owui_plan_walks_its_index"], bool)
    assert size["owui_vector_index"]["index"] == store.OWUI_VECTOR_INDEX_NAME and size["owui_vector_index"]["bytes"] > 0
    legacy = size["legacy"]
    assert legacy["queries_timed"] == 2 and legacy["bm25_build_ms"]["n"] == 2
    rec = size["recall"]
    assert rec["index_scan_verified"], "the bare-index recall must come from the HNSW index"
    # ef_search 1000 over 1000 rows explores (nearly) the whole graph: recall must then be ~1; a harness
    # that compared the wrong ids would report ~0 here.
    assert rec["bare_index_limit_10"]["1000"]["recall_at_10"] >= 0.99
    assert 0 <= rec["bare_index_limit_10"]["10"]["recall_at_10"] <= 1
    assert size["lexrank"]["candidates_per_query"]["p50"] > 0
    # 10 and 100 rows pass: the cost rule scores them exactly, so the arm's top 10 is the exact one
    for name in ("p1", "p10"):
        got = size["filtered_recall"]["classes"][name]
        assert got["recall_at_10"] == 1.0 and got["strategy"] == ["exact"], (name, got)
    assert size["filtered_recall"]["classes"]["p10"]["graph"] == ["collections"]
    statements = [p["statement"] for p in size["explain"]["ragfr_hybrid"]]
    assert any(s.startswith("WITH stats") for s in statements), statements  # the BM25 statement was explained
    assert all("..." in line or len(line) < 2000 for p in size["explain"]["ragfr_hybrid"] for line in p["plan"])
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # --drop removed the database
        assert conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (size["database"],)).fetchone() is None
    printed = capsys.readouterr().out
    assert printed == report.markdown(result) and "ragfr hybrid (no rerank)" in printed
    assert "Cache state: warm" in printed, "every latency table says which cache state it measured"
    assert "Declared filter indexes at 1k: sel=p10 (100 rows" in printed
    assert "### Throughput under concurrency" in printed


def test_unreachable_database_is_one_line_without_password(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main.main(["--dsn", "postgresql://bench:s3cret@127.0.0.1:1/x", "--sizes", "1000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ragfr bench: database error") and "\n" not in err and "s3cret" not in err


def test_missing_dsn_is_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert bench_main.main(["--sizes", "1000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ragfr bench: no database") and "\n" not in err


def test_collections_bench_searches_knowledge_bases_together_only_past_the_limit() -> None:
    """bench.collections' groups: every collection past collection_exact_rows, every one under it, the smallest
    with the largest; a group that together stays under the limit is scored exactly as one and is left out."""
    from ragfr_tools.bench.collections import _groups

    assert _groups([1000, 4000, 9000, 16000, 30000, 40000]) == [
        ("kb16000", "kb30000", "kb40000"), ("kb1000", "kb4000", "kb9000"), ("kb1000", "kb40000")]
    assert _groups([1000, 2000, 3000]) == []
    assert _groups([1000, 20000]) == [("kb1000", "kb20000")]


def test_collections_bench_loads_what_it_generated_and_reports_each_layout(pg_dsn: str) -> None:
    """bench.collections end to end at the smallest sizes that still give one collection its own graph: the
    binary COPY must store the generated vectors (else recall against numpy's exact top 10 falls), and each
    phase must say which structure its searches read. Then bench.collection_writes on the database it kept:
    one graph written for the small collection, two for the large one, and nothing left behind."""
    from ragfr.db.connect import with_database
    from ragfr_tools import pgdb
    from ragfr_tools.bench import collection_writes
    from ragfr_tools.bench.collections import BEFORE, SHIPPED, run

    kept = "ragfr_test_bench_collections"
    pgdb.drop_database(pg_dsn, kept)
    try:
        out = run(pg_dsn, [1000, 11000], queries=3, seed=39, keep=kept)

        def scopes(phase: str) -> dict[str, list[str]]:
            return {r["collection"]: r["scope"] for r in out["phases"][phase]}

        assert scopes(BEFORE)["kb11000"] == ["shared graph"]
        assert scopes(SHIPPED) == {"kb1000": ["collections"], "kb11000": ["collection graph"]}
        exact = [r for r in out["phases"][SHIPPED] if r["scope"] == ["collections"]]
        assert exact and all(r["recall_at_10"] == 1.0 for r in exact)
        [together] = out["together"][SHIPPED]
        assert together["collections"] == ["kb1000", "kb11000"] and together["scope"] == ["per collection"]
        assert out["collection_graphs"]["collections_declared"] == ["kb11000"]
        [graph] = out["collection_graphs"]["built"]
        assert graph["bytes"] > 0 and out["maintenance_work_mem"] == "1GB"

        db = with_database(pg_dsn, kept)
        writes = collection_writes.run(db, ["kb1000", "kb11000"], batches=2, batch=3, seed=1)
        small, large = writes["collections"]
        assert (small["own_graph"], small["graphs_written"]) == (None, 1)
        assert large["own_graph"] == graph["index"] and large["graphs_written"] == 2
        assert small["ms_per_chunk"]["n"] == large["ms_per_chunk"]["n"] == 1  # the warm-up batch not counted
        with psycopg.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM document_chunk").fetchone() == (12000,)
    finally:
        pgdb.drop_database(pg_dsn, kept)
