"""ragfr.metrics: names and types per Prometheus conventions, counters that move with what is recorded, and
an endpoint that serves well-formed exposition text once per process. Searches on the real database move
these counters in tests/retrieval/test_search.py; the real Open WebUI serves them in tests/owui/test_e2e.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from tests.support.paths import REPO

from ragfr import metrics
from ragfr.owui.runtime import provenance
from ragfr.owui.runtime.chat_gate import gate
from ragfr.owui.runtime.errors import VectorLengthError
from ragfr.owui.runtime.vectors import require_vector_length


def value(name: str, **labels: str) -> float:
    found = REGISTRY.get_sample_value(name, labels)
    assert found is not None, f"no sample {name}{labels}"
    return found


def families() -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(generate_latest(REGISTRY).decode())}


def test_every_metric_is_exposed_with_its_type_and_every_series_from_zero() -> None:
    found = families()
    want = {
        "ragfr_searches": "counter", "ragfr_search_duration_seconds": "histogram",
        "ragfr_search_arm_duration_seconds": "histogram", "ragfr_search_underfilled": "counter",
        "ragfr_gate_decisions": "counter", "ragfr_embedding_space_mismatches": "counter",
    }
    assert {n: found[n].type for n in want if n in found} == want
    samples = {(s.name, tuple(sorted(s.labels.items()))) for f in found.values() for s in f.samples}
    for outcome in ("ok", "timeout", "error"):
        assert ("ragfr_searches_total", (("outcome", outcome),)) in samples
    for arm in ("lexical", "vector"):
        assert ("ragfr_search_arm_duration_seconds_count", (("arm", arm),)) in samples
    for surface in ("chat", "cli"):
        for decision in ("answer", "refuse"):
            assert ("ragfr_gate_decisions_total", (("decision", decision), ("surface", surface))) in samples
    for check in ("model", "dimension"):
        assert ("ragfr_embedding_space_mismatches_total", (("check", check),)) in samples


def test_names_follow_prometheus_conventions() -> None:
    ours = [f for f in families().values() if f.name.startswith("ragfr")]
    assert ours
    for f in ours:
        assert f.name.startswith("ragfr_") and f.documentation
        if f.type == "counter":
            assert all(s.name.endswith("_total") for s in f.samples), f.name  # no *_created series
        if f.type == "histogram":
            assert f.name.endswith("_seconds"), f.name


def test_latency_buckets_have_a_bound_at_the_200_ms_alert() -> None:
    assert 0.2 in metrics.LATENCY_BUCKETS


def test_a_search_moves_the_totals_both_arms_and_underfill() -> None:
    ok, total = value("ragfr_searches_total", outcome="ok"), value("ragfr_search_duration_seconds_count")
    lex, vec = (value("ragfr_search_arm_duration_seconds_count", arm=a) for a in ("lexical", "vector"))
    slow = value("ragfr_search_duration_seconds_bucket", le="0.2")
    short = value("ragfr_search_underfilled_total")
    metrics.observe_search(250.0, {"lexical": 12.0, "vector": 240.0}, underfilled=True)
    assert value("ragfr_searches_total", outcome="ok") == ok + 1
    assert value("ragfr_search_duration_seconds_count") == total + 1
    assert value("ragfr_search_duration_seconds_bucket", le="0.2") == slow  # 250 ms is above the 200 ms bound
    assert value("ragfr_search_arm_duration_seconds_count", arm="lexical") == lex + 1
    assert value("ragfr_search_arm_duration_seconds_count", arm="vector") == vec + 1
    assert value("ragfr_search_underfilled_total") == short + 1
    metrics.observe_search(5.0, {"lexical": 5.0}, underfilled=False)  # a lexical-only search
    assert value("ragfr_search_arm_duration_seconds_count", arm="vector") == vec + 1
    assert value("ragfr_search_arm_duration_seconds_count", arm="lexical") == lex + 2
    assert value("ragfr_search_underfilled_total") == short + 1


def test_failures_are_counted_by_kind() -> None:
    timeout, error = value("ragfr_searches_total", outcome="timeout"), value("ragfr_searches_total", outcome="error")
    metrics.search_failed(timeout=True)
    metrics.search_failed(timeout=False)
    assert value("ragfr_searches_total", outcome="timeout") == timeout + 1
    assert value("ragfr_searches_total", outcome="error") == error + 1


def test_the_chat_gate_counts_its_decisions() -> None:
    refuse, answer = (value("ragfr_gate_decisions_total", surface="chat", decision=d) for d in ("refuse", "answer"))
    metadata: dict[str, Any] = {"files": [{"type": "collection", "id": "kb"}]}
    gate(metadata, [], question="Quel délai ?", searched=True, reranked=False)  # searched, nothing from ragfr
    assert value("ragfr_gate_decisions_total", surface="chat", decision="refuse") == refuse + 1
    strong = [{"source": {"id": "kb"}, "document": ["passage"],
               "metadata": [{"name": "a.txt", "ragfr_chunk_id": "c0", "ragfr_rrf_score": 0.0328,
                             "ragfr_top_rrf_score": 0.0328, "ragfr_provenance": provenance.issue()}]}]
    gate({"files": [{"type": "collection", "id": "kb"}]}, strong, question="Quel délai ?", searched=True,
         reranked=False)
    assert value("ragfr_gate_decisions_total", surface="chat", decision="answer") == answer + 1
    assert value("ragfr_gate_decisions_total", surface="chat", decision="refuse") == refuse + 1
    before = value("ragfr_gate_decisions_total", surface="chat", decision="refuse")
    gate({}, [], question="bonjour", searched=False, reranked=False)  # nothing to judge: no decision
    assert value("ragfr_gate_decisions_total", surface="chat", decision="refuse") == before


def test_a_vector_of_another_width_is_counted() -> None:
    before = value("ragfr_embedding_space_mismatches_total", check="dimension")
    require_vector_length([0.1] * 4, 4)
    assert value("ragfr_embedding_space_mismatches_total", check="dimension") == before
    with pytest.raises(VectorLengthError):
        require_vector_length([0.1] * 3, 4)
    assert value("ragfr_embedding_space_mismatches_total", check="dimension") == before + 1


def _in_child(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter: serving starts a thread and binds a port for the life of the process."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
        cwd=REPO, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src"), **env}, check=False,
    )


def test_off_unless_a_port_is_set_and_a_bad_value_is_logged_not_raised() -> None:
    done = _in_child("""
        import logging, sys
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)
        from ragfr.metrics import serve_from_env
        print(serve_from_env({}), serve_from_env({"RAGFR_METRICS_PORT": "0"}),
              serve_from_env({"RAGFR_METRICS_PORT": "http"}), serve_from_env({"RAGFR_METRICS_PORT": "70000"}))
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None"] * 4
    assert "RAGFR_METRICS_PORT='http' is not a TCP port" in done.stderr


def test_serves_well_formed_text_once_per_process_and_a_taken_port_is_a_warning() -> None:
    done = _in_child("""
        import logging, os, socket, sys, urllib.request
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)
        from ragfr import metrics
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
        env = {"RAGFR_METRICS_PORT": str(port), "RAGFR_METRICS_ADDR": "127.0.0.1"}
        print("taken", metrics.serve_from_env(env))  # a second worker of the same pod
        s.close()
        print("first", metrics.serve_from_env(env) == port)
        print("again", metrics.serve_from_env(env) == port)  # an app imported twice: no second server
        metrics.gate_decision("chat", False)
        sys.stdout.write(urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode())
    """)
    assert done.returncode == 0, done.stderr
    head, _, text = done.stdout.partition("again True\n")
    assert head.split() == ["taken", "None", "first", "True"], done.stdout[:300]
    assert "is taken" in done.stderr and "only the first one's metrics are exported" in done.stderr
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples[("ragfr_gate_decisions_total", (("decision", "refuse"), ("surface", "chat")))] == 1.0
    assert samples[("ragfr_searches_total", (("outcome", "ok"),))] == 0.0
