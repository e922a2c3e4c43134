"""A tiny run of the switch reader-wait benchmark (python -m ragfr_tools.bench.switch_wait), so it cannot rot.

Real PostgreSQL and the real migration runner and search; synthetic vectors, as in the benchmark itself (it
measures lock waits, not embeddings). Timings are NOT asserted; the run's structure is: the switch happened,
every late row was caught up, searches ran before and during it.
"""

from __future__ import annotations

import pytest
from tests.support.paths import PIAF_JSON

from ragfr_tools.bench import switch_wait

pytestmark = pytest.mark.skipif(not PIAF_JSON.is_file(), reason=f"PIAF not found at {PIAF_JSON}")


def test_tiny_switch_run(pg_dsn: str) -> None:
    result = switch_wait.run(pg_dsn, rows=600, late_rows=20, batch=64)
    assert result["rows"] == 600 and result["late_rows"] == 20 and result["synthetic_vectors"] is True
    assert result["searches_before"]["n"] > 0 and result["searches_during_switch_run"]["n"] > 0
    assert result["rows_in_target_space"] == result["rows_total"] == 620  # the late rows were caught up
    assert result["searches_failed"] <= 1  # the one that may straddle the width change
    assert result["searches_during_switch_run"]["max_ms"] >= result["searches_during_switch_run"]["p50_ms"]


def test_synthetic_vectors_are_deterministic_unit_vectors() -> None:
    a, b = switch_wait.synthetic("clause", 384), switch_wait.synthetic("clause", 384)
    assert a == b and len(a) == 384 and abs(sum(x * x for x in a) - 1) < 1e-9
    assert switch_wait.synthetic("autre clause", 384) != a
