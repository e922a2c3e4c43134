"""Prometheus metrics of ragfr's retrieval and evidence gate, and the endpoint that serves them.

Recorded wherever the code runs (the Open WebUI adapter, `ragfr search`/`ask`, the evaluation); served only
by a process that calls `serve_from_env()` with RAGFR_METRICS_PORT set: the patched Open WebUI does, from
its lifespan (patches/open-webui). Every metric and the alerts built on them: docs/runbooks/monitoring.md.

One exporting process per pod: prometheus_client keeps these values in the memory of the process that
records them. Open WebUI runs ONE uvicorn worker unless UVICORN_WORKERS says otherwise; with several, the
first worker to bind the port serves only its own values and the others log that theirs are not exported
(scale with replicas instead: the chart's default).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Mapping

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics, start_http_server

log = logging.getLogger("ragfr.metrics")

PORT_ENV = "RAGFR_METRICS_PORT"
ADDR_ENV = "RAGFR_METRICS_ADDR"
# Fine around 200 ms, the p95 a chat search must stay under (the PrometheusRule's alert): the quantile
# interpolated inside a bucket is only as exact as its bounds.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0)
OUTCOMES = ("ok", "timeout", "error")
SURFACES = ("chat", "cli")
DECISIONS = ("answer", "caution", "refuse")
RULES = ("evidence", "rank")
CHECKS = ("model", "dimension")
UNAVAILABLE = ("busy", "unavailable", "failed", "refused")

# No `*_created` series beside each counter and histogram: they double the series count and nothing here reads them.
disable_created_metrics()

SEARCHES = Counter(
    "ragfr_searches", "Hybrid searches run, by outcome (ok, timeout: statement_timeout or pool wait, error).",
    ["outcome"],
)
SEARCH_SECONDS = Histogram(
    "ragfr_search_duration_seconds", "Wall time of a whole hybrid search that succeeded (both arms, fusion, fetch).",
    buckets=LATENCY_BUCKETS,
)
ARM_SECONDS = Histogram(
    "ragfr_search_arm_duration_seconds", "Wall time of one retrieval arm (label: the arm's metric label, "
    "ragfr.retrieval.arms).",
    ["arm"], buckets=LATENCY_BUCKETS,
)
UNDERFILLED = Counter(
    "ragfr_search_underfilled", "Searches that returned fewer hits than asked because a cap, not the data, cut "
    "an arm short (filtered top-k; the reason is in the search log).",
)
GATE_DECISIONS = Counter(
    "ragfr_gate_decisions", "Evidence gate decisions: answer (the chat model is called), caution (called, told "
    "the passages may not hold the answer) or refuse (no model call), in the chat (Open WebUI) or the CLI (ragfr ask).",
    ["surface", "decision"],
)
GATE_RULES = Counter(
    "ragfr_gate_rules", "Which rule took each evidence gate decision: evidence (the fitted gate of the search's "
    "embedding model, or the model-free one) or rank (a calibrated cross-encoder scale, or no fitted gate loads).",
    ["surface", "rule"],
)
GATE_CALIBRATION_REFUSED = Gauge(
    "ragfr_gate_calibration_refused", "1 while this process ignores its RAGFR_GATE_CALIBRATION (the chart's "
    "openwebui.gate.calibration) because it was fitted on another feature list than this version computes: the "
    "shipped coefficients of that embedding model decide, or the rank rule where none ship. Refit with `ragfr gate "
    "calibrate`.",
)
SPACE_MISMATCHES = Counter(
    "ragfr_embedding_space_mismatches", "Embeddings refused because they are not of the stored embedding space: "
    "another model (check=model) or another width (check=dimension).",
    ["check"],
)
CHAT_SEARCH_UNAVAILABLE = Counter(
    "ragfr_chat_search_unavailable", "Chat questions ragfr could not search, answered with a message and no model "
    "call: busy (no slot or connection within the wait limit, a timeout), unavailable (the database does not answer), "
    "failed (an error), refused (a question "
    "it will not search: too long, NUL, bad filter). Never Open WebUI's legacy path.",
    ["kind"],
)

# Every series exists from the start at 0: rate() and the alerts see a flat line, not a missing one.
for _o in OUTCOMES:
    SEARCHES.labels(_o)
for _s in SURFACES:
    for _d in DECISIONS:
        GATE_DECISIONS.labels(_s, _d)
    for _r in RULES:
        GATE_RULES.labels(_s, _r)
for _c in CHECKS:
    SPACE_MISMATCHES.labels(_c)
for _k in UNAVAILABLE:
    CHAT_SEARCH_UNAVAILABLE.labels(_k)


def declare_arms(labels: Iterable[str]) -> None:
    """The arms' series exist from the start at 0, like every other (ragfr.retrieval.arms declares its own)."""
    for label in labels:
        ARM_SECONDS.labels(label)


def observe_search(total_ms: float, arms_ms: Mapping[str, float], underfilled: bool) -> None:
    """One successful search. `arms_ms`: each arm's wall time by its metric label (Arm.metric_label)."""
    SEARCHES.labels("ok").inc()
    SEARCH_SECONDS.observe(total_ms / 1000)
    for arm, ms in arms_ms.items():
        ARM_SECONDS.labels(arm).observe(ms / 1000)
    if underfilled:
        UNDERFILLED.inc()


def search_failed(timeout: bool) -> None:
    SEARCHES.labels("timeout" if timeout else "error").inc()


def gate_decision(surface: str, decision: bool | str, rule: str | None = None) -> None:
    """`decision`: the outcome (answer, caution, refuse), or True/False for answer/refuse; `rule`: which rule
    took it (evidence or rank), counted when given."""
    GATE_DECISIONS.labels(surface, decision if isinstance(decision, str) else
                          "answer" if decision else "refuse").inc()
    if rule is not None:
        GATE_RULES.labels(surface, rule).inc()


def gate_calibration_refused() -> None:
    GATE_CALIBRATION_REFUSED.set(1)


def chat_search_unavailable(kind: str) -> None:
    CHAT_SEARCH_UNAVAILABLE.labels(kind).inc()


def space_mismatch(check: str) -> None:
    SPACE_MISMATCHES.labels(check).inc()


_lock = threading.Lock()
_served: int | None = None


def serve_from_env(environ: Mapping[str, str] | None = None) -> int | None:
    """Start the /metrics HTTP server on RAGFR_METRICS_PORT (unset or 0: off) once per process; the port.

    Safe to call any number of times (an app imported twice, a lifespan run again): the first call that
    binds wins. A port already taken (a second uvicorn worker of the same pod) or a bad value is logged,
    never raised: metrics must not stop the chat from starting."""
    global _served
    env = os.environ if environ is None else environ
    raw = (env.get(PORT_ENV) or "").strip()
    if raw in ("", "0"):
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        log.error("ragfr: %s=%r is not a TCP port (1-65535): metrics are not served", PORT_ENV, raw)
        return None
    port, addr = int(raw), (env.get(ADDR_ENV) or "0.0.0.0").strip()
    with _lock:
        if _served is not None:
            return _served
        try:
            start_http_server(port, addr=addr)
        except OSError as exc:
            log.warning("ragfr: metrics not served by process %s: %s:%s is taken (%s); with several uvicorn "
                        "workers only the first one's metrics are exported", os.getpid(), addr, port, exc)
            return None
        _served = port
    log.info("ragfr: Prometheus metrics on http://%s:%s/metrics", addr, port)
    return port
