"""Metrics in the chart: the ports the processes really listen on, the exporter's credentials kept out of argv,
who may scrape, the monitor, and a PrometheusRule that `promtool check rules` accepts and whose alerts
`promtool test rules` proves fire (and stay quiet) on synthetic series. promtool comes from Debian's
`prometheus` package (scripts/setup-apt.sh)."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.chart import containers, env_of, error_line, example_values, one, render

from ragfr.metrics import PORT_ENV

MONITORING = example_values("monitoring")


def _rule_file(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return one(docs, "PrometheusRule", "-alerts")["spec"]


def _alerts(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for g in _rule_file(docs)["groups"] for r in g["rules"]}


def test_off_by_default() -> None:
    docs = render()
    assert not [d for d in docs if d["apiVersion"].startswith("monitoring.coreos.com/")]
    text = yaml.safe_dump_all(docs)
    assert PORT_ENV not in text and "postgres-exporter" not in text and "name: metrics" not in text


def test_open_webui_declares_the_port_its_process_listens_on() -> None:
    docs = render(MONITORING)
    port = MONITORING.get("openwebui", {}).get("metrics", {}).get("port", 9464)
    env = one(docs, "ConfigMap", "-openwebui-env")["data"]
    assert env[PORT_ENV] == str(port)  # what ragfr.metrics.serve_from_env reads
    deployment = one(docs, "Deployment", "-openwebui")
    (owui,) = [c for kind, c in containers(deployment["spec"]["template"]["spec"]) if c["name"] == "open-webui"]
    assert {"name": "metrics", "containerPort": port} in owui["ports"]
    service = one(docs, "Service", "-openwebui")
    assert {"name": "metrics", "port": port, "targetPort": "metrics"} in service["spec"]["ports"]


def test_postgres_exporter_sidecar_reads_the_password_from_the_secret_by_env() -> None:
    docs = render(MONITORING)
    sts = one(docs, "StatefulSet", "-ragdb")
    spec = sts["spec"]["template"]["spec"]
    (exporter,) = [c for _, c in containers(spec) if c["name"] == "metrics"]
    image = exporter["image"]
    assert image.startswith("prometheuscommunity/postgres-exporter:v") and not image.endswith(":latest")
    env = env_of(exporter)
    # Its own role with pg_monitor only (files/ragdb-roles.sh; tests/db/test_app_role.py runs it), never the
    # superuser, and its own password key.
    assert env["DATA_SOURCE_USER"] == "ragfr_monitor"
    assert env["DATA_SOURCE_PASS"] == {"secretKeyRef": {"name": "ragfr-ragdb", "key": "monitor-password"}}
    roles = one(docs, "Job", "-migrate-*")["spec"]["template"]["spec"]["initContainers"][1]
    assert roles["name"] == "db-roles" and env_of(roles)["MONITOR_USER"] == "ragfr_monitor"
    assert env_of(roles)["MONITOR_PASSWORD"] == env["DATA_SOURCE_PASS"]
    assert "@" not in env["DATA_SOURCE_URI"] and "password" not in " ".join(exporter.get("args", [])).lower()
    assert not exporter.get("command")
    assert {"name": "metrics", "containerPort": 9187} in exporter["ports"]
    assert exporter["securityContext"]["readOnlyRootFilesystem"] is True and exporter["resources"]["limits"]
    service = one(docs, "Service", "-ragdb")
    assert {"name": "metrics", "port": 9187, "targetPort": "metrics"} in service["spec"]["ports"]
    assert "metrics" not in str(one(docs, "Service", "-ragdb-headless")["spec"]["ports"])


def test_only_scrape_from_reaches_the_metrics_ports() -> None:
    docs = render(MONITORING)
    peers = MONITORING["metrics"]["scrapeFrom"]
    for name, port in (("-openwebui", 9464), ("-ragdb", 9187)):
        policy = one(docs, "NetworkPolicy", name)
        rules = [r for r in policy["spec"]["ingress"] if {"port": port, "protocol": "TCP"} in r["ports"]]
        assert rules == [{"from": peers, "ports": [{"port": port, "protocol": "TCP"}]}], (name, policy["spec"])
    # Off: no rule for the metrics ports.
    default = render()
    assert "9464" not in str(one(default, "NetworkPolicy", "-openwebui")["spec"])
    assert "9187" not in str(one(default, "NetworkPolicy", "-ragdb")["spec"])


@pytest.mark.parametrize("kind,key", [("ServiceMonitor", "endpoints"), ("PodMonitor", "podMetricsEndpoints")])
def test_monitor_of_either_kind(kind: str, key: str) -> None:
    values = copy.deepcopy(MONITORING)
    values["metrics"]["serviceMonitor"].update(kind=kind, interval="15s", scrapeTimeout="5s")
    monitor = one(render(values), kind, "-metrics")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"][key] == [{"port": "metrics", "path": "/metrics", "interval": "15s", "scrapeTimeout": "5s"}]
    assert monitor["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "ragfr",
                                                          "app.kubernetes.io/instance": "ragfr"}


def test_alerts_follow_what_is_enabled() -> None:
    assert set(_alerts(render(MONITORING))) == {
        "RagfrVolumeFillingUp", "RagfrMigrationJobFailed", "RagfrDatabaseDown", "RagfrGateRefusalRateJump",
        "RagfrSearchLatencyHigh"}
    no_exporter = copy.deepcopy(MONITORING)
    no_exporter["ragdb"]["metrics"]["enabled"] = False
    assert "RagfrDatabaseDown" not in _alerts(render(no_exporter))


@pytest.mark.parametrize("values,message", [
    ({"openwebui": {"metrics": {"enabled": True}, "patch": {"enabled": False}}},
     "openwebui.metrics.enabled=true needs openwebui.patch.enabled=true"),
    ({"openwebui": {"metrics": {"enabled": True, "port": 8080}}}, "openwebui.metrics.port=8080 is Open WebUI's own port"),
    ({"ragdb": {"metrics": {"enabled": True}}, "database": {"mode": "external", "external": {
        "host": "db.example.org", "existingSecret": "db"}}}, "ragdb.metrics.enabled=true needs database.mode=internal"),
    ({"metrics": {"prometheusRule": {"enabled": True}}}, "metrics.serviceMonitor/prometheusRule need an endpoint"),
    ({"ragdb": {"metrics": {"enabled": True, "image": {"tag": "latest"}}}}, "tag"),
    ({"openwebui": {"env": {PORT_ENV: "9999"}}}, f"openwebui.env.{PORT_ENV} is computed by the chart"),
])
def test_bad_metrics_values_are_one_line_errors(values: dict[str, Any], message: str) -> None:
    assert message in error_line(values)


def _promtool() -> str:
    found = shutil.which("promtool")
    if not found:
        pytest.fail("promtool is missing: `make setup` installs Debian's prometheus package (scripts/setup-apt.sh)")
    return found


def test_promtool_check_rules_accepts_the_rendered_rule(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(_rule_file(render(MONITORING))))
    done = subprocess.run([_promtool(), "check", "rules", str(rules)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 5 rules found" in done.stdout, done.stdout


def _series(name: str, values: str, **labels: str) -> dict[str, str]:
    inner = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


OWUI = {"namespace": "ragfr", "pod": "ragfr-openwebui-5d8f7c9b6-x2x7q"}
DAY = 1440


def _latency(le_bucket: str) -> list[dict[str, str]]:
    """Ten searches a minute, all within the bucket ending at `le_bucket`."""
    out = []
    for le in ("0.1", "0.2", "0.25", "+Inf"):
        hit = float(le) >= float(le_bucket) if le != "+Inf" else True
        out.append(_series("ragfr_search_duration_seconds_bucket", "0+10x40" if hit else "0x40", le=le, **OWUI))
    return out


def _decisions(refuse_per_min_after: int, answer_per_min_after: int) -> list[dict[str, str]]:
    """A day at 1 refusal for 9 answers a minute, then 30 minutes at the given rates."""
    return [
        _series("ragfr_gate_decisions_total", f"0+1x{DAY} {DAY}+{refuse_per_min_after}x30",
                surface="chat", decision="refuse", **OWUI),
        _series("ragfr_gate_decisions_total", f"0+9x{DAY} {9 * DAY}+{answer_per_min_after}x30",
                surface="chat", decision="answer", **OWUI),
    ]


UNIT_TESTS: list[dict[str, Any]] = [
    {"interval": "1m", "input_series": _latency("0.25"), "alert_rule_test": [
        {"eval_time": "30m", "alertname": "RagfrSearchLatencyHigh", "exp_alerts": [{"exp_labels": {"severity": "warning"}}]}]},
    {"interval": "1m", "input_series": _latency("0.1"), "alert_rule_test": [
        {"eval_time": "30m", "alertname": "RagfrSearchLatencyHigh", "exp_alerts": []}]},
    {"interval": "1m", "input_series": _decisions(6, 4), "alert_rule_test": [
        {"eval_time": f"{DAY + 20}m", "alertname": "RagfrGateRefusalRateJump",
         "exp_alerts": [{"exp_labels": {"severity": "warning"}}]}]},
    {"interval": "1m", "input_series": _decisions(1, 9), "alert_rule_test": [
        {"eval_time": f"{DAY + 20}m", "alertname": "RagfrGateRefusalRateJump", "exp_alerts": []}]},
    {"interval": "1m", "input_series": [
        _series("ragfr_gate_decisions_total", f"0x{DAY} 0+1x30", surface="chat", decision="refuse", **OWUI),
        _series("ragfr_gate_decisions_total", f"0x{DAY} 0x30", surface="chat", decision="answer", **OWUI)],
     "alert_rule_test": [  # a refusal every 2 minutes or so is not a jump: under minDecisions
         {"eval_time": f"{DAY + 20}m", "alertname": "RagfrGateRefusalRateJump", "exp_alerts": []}]},
    {"interval": "1m", "input_series": [_series("pg_up", "1x10 0x20", namespace="ragfr", pod="ragfr-ragdb-0")],
     "alert_rule_test": [
         {"eval_time": "9m", "alertname": "RagfrDatabaseDown", "exp_alerts": []},
         {"eval_time": "25m", "alertname": "RagfrDatabaseDown", "exp_alerts": [{"exp_labels": {"severity": "critical"}}]}]},
    {"interval": "1m", "input_series": [_series("pg_up", "1x30", namespace="other", pod="ragfr-ragdb-0")],
     "alert_rule_test": [  # no series of this release at all: the target is gone
         {"eval_time": "10m", "alertname": "RagfrDatabaseDown",
          "exp_alerts": [{"exp_labels": {"severity": "critical", "namespace": "ragfr"}}]}]},
    {"interval": "1m", "input_series": [
        _series("kubelet_volume_stats_used_bytes", "85x30", namespace="ragfr", persistentvolumeclaim="data-ragfr-ragdb-0"),
        _series("kubelet_volume_stats_capacity_bytes", "100x30", namespace="ragfr", persistentvolumeclaim="data-ragfr-ragdb-0"),
        _series("kubelet_volume_stats_used_bytes", "50x30", namespace="ragfr", persistentvolumeclaim="ragfr-openwebui-data"),
        _series("kubelet_volume_stats_capacity_bytes", "100x30", namespace="ragfr", persistentvolumeclaim="ragfr-openwebui-data"),
        _series("kubelet_volume_stats_used_bytes", "99x30", namespace="ragfr", persistentvolumeclaim="someone-else"),
        _series("kubelet_volume_stats_capacity_bytes", "100x30", namespace="ragfr", persistentvolumeclaim="someone-else")],
     "alert_rule_test": [{"eval_time": "20m", "alertname": "RagfrVolumeFillingUp", "exp_alerts": [{"exp_labels": {
         "severity": "warning", "namespace": "ragfr", "persistentvolumeclaim": "data-ragfr-ragdb-0"}}]}]},
    {"interval": "1m", "input_series": [
        _series("kube_job_status_failed", "1x10", namespace="ragfr", job_name="ragfr-migrate-0c1d2e3f4a"),
        _series("kube_job_status_succeeded", "0x10", namespace="ragfr", job_name="ragfr-migrate-0c1d2e3f4a"),
        _series("kube_job_status_failed", "1x10", namespace="ragfr", job_name="ragfr-migrate-9b8a7c6d5e"),
        _series("kube_job_status_succeeded", "1x10", namespace="ragfr", job_name="ragfr-migrate-9b8a7c6d5e")],
     "alert_rule_test": [{"eval_time": "5m", "alertname": "RagfrMigrationJobFailed", "exp_alerts": [{"exp_labels": {
         "severity": "critical", "namespace": "ragfr", "job_name": "ragfr-migrate-0c1d2e3f4a"}}]}]},
]


def test_promtool_unit_tests_fire_each_alert_and_only_then(tmp_path: Path) -> None:
    """Expressions, `for` and labels are tested; annotations are left out of this copy (they are templated
    text, checked by `promtool check rules` above)."""
    spec = _rule_file(render(MONITORING))
    for group in spec["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(
        {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": UNIT_TESTS}, sort_keys=False))
    done = subprocess.run([_promtool(), "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "SUCCESS" in done.stdout
