"""The chart README is generated from values.schema.json + values.yaml and must not go stale."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import helm_python as helm
import pytest
import yaml
from tests.support.chart import CHART

from ragfr_tools import chartdocs
from ragfr_tools.chartdocs import Row, render, rows
from ragfr_tools.chartdocs import __main__ as cli


def test_committed_readme_is_current_and_is_what_helm_show_readme_prints() -> None:
    readme = (CHART / "README.md").read_text()
    assert readme == render(CHART), "charts/ragfr/README.md is stale: run `make chart-docs` and commit it"
    assert helm.show(str(CHART), output_format="readme").strip() == readme.strip()


def test_every_value_has_a_row_with_type_default_and_description() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    table = {r.key: r for r in rows(schema, values)}

    def leaves(node: object, path: str = "") -> list[str]:
        if isinstance(node, dict) and node:
            return [leaf for k, v in node.items() for leaf in leaves(v, f"{path}.{k}" if path else k)]
        return [path]

    for leaf in leaves(values):
        # a leaf is its own row, or lives inside a free-form map row (resources, affinity, probes...)
        parts = leaf.split(".")
        owner = next((".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in table), None)
        assert owner is not None, f"{leaf} has no row in the README"
        row = table[owner]
        assert row.type and row.description, owner
    assert table["backup.keep"] == Row("backup.keep", "integer", "7", table["backup.keep"].description)
    assert table["ollama.settings.keepAlive"].default == '"30m"'


def test_rows_walk_objects_and_keep_free_form_maps_whole() -> None:
    schema = {"properties": {
        "a": {"type": "object", "properties": {
            "mode": {"type": "string", "enum": ["x", "y"], "description": "Pick  one\n of | two."},
            "list": {"type": "array", "items": {"type": "string"}, "description": "Names."}}},
        "res": {"type": "object", "description": "Free form.", "additionalProperties": {"type": "string"}},
        "n": {"type": ["string", "integer"], "description": "Either."}}}
    values = {"a": {"mode": "x", "list": ["p"]}, "res": {"cpu": "1"}, "n": 3}
    assert list(rows(schema, values)) == [
        Row("a.mode", 'string ("x", "y")', '"x"', "Pick one of | two."),
        Row("a.list", "array of string", '["p"]', "Names."),
        Row("res", "object", '{"cpu": "1"}', "Free form."),
        Row("n", "string or integer", "3", "Either."),
    ]


def test_check_fails_when_the_schema_changed_after_generation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    chart = tmp_path / "ragfr"
    shutil.copytree(CHART, chart)
    monkeypatch.setattr(cli, "CHART", chart)
    assert cli.main(["--check"]) == 0
    schema = json.loads((chart / "values.schema.json").read_text())
    schema["properties"]["backup"]["properties"]["keep"]["description"] = "Changed | text."
    (chart / "values.schema.json").write_text(json.dumps(schema))
    assert cli.main(["--check"]) == 1
    assert "is stale: run `make chart-docs`" in capsys.readouterr().err
    assert cli.main([]) == 0 and "Changed \\| text." in (chart / "README.md").read_text()
    assert chartdocs.render(chart) == (chart / "README.md").read_text()
