"""docs/runbooks/monitoring.md lists every metric ragfr exposes (with its type and labels), every alert the
chart renders and every metrics value: a metric, alert or value added without its documentation fails here."""

from __future__ import annotations

import re

from prometheus_client import REGISTRY
from tests.support.chart import example_values, render
from tests.support.paths import REPO

import ragfr.metrics  # noqa: F401  (registers the metrics)

DOC = (REPO / "docs" / "runbooks" / "monitoring.md").read_text(encoding="utf-8")


def _row(name: str) -> str:
    rows = [line for line in DOC.splitlines() if line.startswith(f"| `{name}")]
    assert len(rows) == 1, f"{name}: expected one table row in monitoring.md, found {len(rows)}"
    return rows[0]


def test_every_metric_is_documented_with_its_type_and_labels() -> None:
    ours = [m for m in REGISTRY.collect() if m.name.startswith("ragfr_")]
    assert len(ours) == 9
    for family in ours:
        name = f"{family.name}_total" if family.type == "counter" else family.name
        row = _row(name)
        assert f"| {family.type} |" in row, row
        labels = {k for s in family.samples for k in s.labels if k not in ("le",)}
        for label in labels:
            values = {s.labels[label] for s in family.samples if label in s.labels}
            assert f"`{label}`" in row and all(f"`{v}`" in row for v in values), (name, label, values)


def test_every_alert_is_documented() -> None:
    docs = render(example_values("monitoring"))
    rule = next(d for d in docs if d["kind"] == "PrometheusRule")
    alerts = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert alerts == set(re.findall(r"^\| `(Ragfr\w+)`", DOC, re.M))
    for alert in alerts:
        row = _row(alert)
        for_ = next(r["for"] for g in rule["spec"]["groups"] for r in g["rules"] if r["alert"] == alert)
        severity = next(r["labels"]["severity"] for g in rule["spec"]["groups"] for r in g["rules"] if r["alert"] == alert)
        assert f"| {for_} | {severity} |" in row, row


def test_every_metrics_value_is_documented() -> None:
    """Each leaf under openwebui.metrics, ragdb.metrics and metrics is named in backticks (alone, dotted, or as
    `.leaf` after its parent); image and resources follow the chart's usual shape and are not listed."""
    import yaml

    values = yaml.safe_load((REPO / "charts" / "ragfr" / "values.yaml").read_text())

    def leaves(prefix: str, node: object) -> list[str]:
        if isinstance(node, dict) and node and prefix.rsplit(".", 1)[-1] not in ("labels",):
            return [leaf for k, v in node.items() if k not in ("image", "resources")
                    for leaf in leaves(f"{prefix}.{k}", v)]
        return [prefix]

    keys = leaves("openwebui.metrics", values["openwebui"]["metrics"]) + leaves(
        "ragdb.metrics", values["ragdb"]["metrics"]) + leaves("metrics", values["metrics"])
    assert len(keys) > 10
    missing = [k for k in keys if not re.search(r"`[\w.]*\b" + re.escape(k.rsplit(".", 1)[-1]) + r"\b", DOC)
               or f"`{k.split('.')[0]}." not in DOC]
    assert missing == []
