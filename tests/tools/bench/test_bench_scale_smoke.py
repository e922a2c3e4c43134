"""A tiny run of `make bench-scale`'s harness, so it cannot rot unnoticed between its hour-long runs.

Real PostgreSQL (our pgvector build, a second private cluster the harness starts, restarts and stops
through scripts/pg.sh), the real retrieval code, 2000 chunks of 16 dims. Timings are NOT asserted (they
belong to the benchmark); what is: both shared_buffers values really applied, the cold pass really cold
(the database's pages evicted from the OS page cache, no warm-up) and the warm one warmed, the footprint
and build-memory figures present and plausible, the Markdown tables produced.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from tests.support.paths import PIAF_JSON

from ragfr_tools.bench import scale, scale_report
from ragfr_tools.bench.memory import ClusterMemory

pytestmark = pytest.mark.skipif(not PIAF_JSON.is_file(), reason=f"PIAF not found at {PIAF_JSON}: scale smoke skipped")


@pytest.fixture
def state_dir():
    # The server's OS user must traverse the state directory: pytest's tmp_path (0700, root) is not.
    path = Path(tempfile.mkdtemp(prefix="ragfr-scale-smoke-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path / "pg"
    shutil.rmtree(path, ignore_errors=True)


def test_scale_harness_measures_cold_and_warm_at_each_shared_buffers(state_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "scale.json"
    code = scale.main(["--sizes", "2000", "--dims", "16", "--queries", "8", "--recall-queries", "4", "--ef", "40",
                       "--shared-buffers", "128MB,160MB", "--state-dir", str(state_dir), "--piaf", str(PIAF_JSON),
                       "--out", str(out)])
    assert code == 0
    result = json.loads(out.read_text())
    # filtered recall by class, against exact search over the passing rows (40 and 400 rows: scored exactly)
    classes = result["sizes"]["2000"]["filtered_recall"]["classes"]
    assert {name: c["recall_at_10"] for name, c in classes.items()} == {"p1": 1.0, "p10": 1.0}
    section = result["sizes"]["2000"]
    assert list(section["runs"]) == ["128MB", "160MB"]
    for sb, run in section["runs"].items():
        assert run["server"]["shared_buffers"] == sb
        ev = run["eviction"]
        assert ev["files"] > 0 and ev["bytes"] > 0
        # Cold means cold: (almost) nothing of the database left in the page cache before the first query.
        assert ev["resident_after"] is not None and ev["resident_after"] <= ev["bytes"] // 20
        assert run["cold"]["warmup_turns"] == 0 and run["warm"]["warmup_turns"] == 5
        for state in ("cold", "warm"):
            cases = run[state]["cases"]
            assert cases["ragfr hybrid (no rerank)"]["latency_ms"]["n"] == 8
            assert cases["owui native hybrid"]["latency_ms"]["n"] == 8
        # The passes read the database back into the page cache.
        assert run["resident_after_runs"] > ev["resident_after"]
    names = {r["name"] for r in section["footprint"]["relations"]}
    assert {"document_chunk", "idx_document_chunk_fts"} <= names
    assert section["footprint"]["database_bytes"] >= sum(r["bytes"] for r in section["footprint"]["relations"])
    memory = section["corpus"]["build"]["memory_per_index"]
    hnsw = next(v for k, v in memory.items() if "vector" in k)
    assert hnsw["peak_mib"] >= hnsw["baseline_mib"] > 0
    assert section["corpus"]["build"]["maintenance_work_mem"] == "4GB"
    assert set(section["recall"]["ragfr_vector_arm"]) == {"40"}
    # The cluster is stopped at the end unless asked otherwise.
    assert not (state_dir / "data" / "postmaster.pid").exists()
    tables = scale_report.markdown(result)
    assert "128MB cold" in tables and "160MB warm" in tables and "idx_document_chunk_fts" in tables
    assert tables in capsys.readouterr().out


def test_bad_shared_buffers_are_refused(state_dir: Path) -> None:
    assert scale.main(["--sizes", "2000", "--shared-buffers", "lots", "--state-dir", str(state_dir)]) != 0
    assert not state_dir.exists(), "nothing was started for a refused argument"


def test_memory_sampler_is_none_for_a_server_that_is_not_local() -> None:
    class Remote:
        def execute(self, _sql):
            class Row:
                def fetchone(self):
                    return (2**22 + 12345,)  # beyond pid_max: no such local process
            return Row()

    assert ClusterMemory.of(Remote()) is None  # type: ignore[arg-type]


def test_recall_alone_skips_the_latency_passes(state_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "recall.json"
    code = scale.main(["--sizes", "2000", "--dims", "16", "--recall-queries", "4", "--ef", "40,100",
                       "--shared-buffers", "128MB", "--skip-latency", "--state-dir", str(state_dir),
                       "--piaf", str(PIAF_JSON), "--out", str(out)])
    assert code == 0
    section = json.loads(out.read_text())["sizes"]["2000"]
    assert section["runs"] == {}
    assert set(section["recall"]["ragfr_vector_arm"]) == {"40", "100"}
    assert "latency not measured (--skip-latency)" in scale_report.markdown(json.loads(out.read_text()))
