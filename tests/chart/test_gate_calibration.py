"""openwebui.gate.calibration at render time (issue 47 item 6): a calibration fitted on another feature list
than this version computes is refused with one line naming the refit command; the chart's list is the
package's (one source: files/gate-features.json is checked against ragfr.gate.features.FEATURES)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.chart import CHART, error_line, one, render

from ragfr.gate import fitted
from ragfr.gate.features import FEATURES

SHIPPED = Path(fitted.__file__).parent / "models" / "local_multilingual-e5-small.json"


def calibration(**changes: Any) -> dict[str, Any]:
    doc = json.loads(SHIPPED.read_text(encoding="utf-8"))
    doc.update(changes)
    return {"openwebui": {"gate": {"calibration": doc}}}


def test_the_chart_compares_against_the_package_feature_list() -> None:
    """Adding, removing or reordering a feature means writing the new list here too:
    python -c 'import json; from ragfr.gate.features import FEATURES; print(json.dumps(list(FEATURES)))'
    > charts/ragfr/files/gate-features.json"""
    assert json.loads((CHART / "files" / "gate-features.json").read_text(encoding="utf-8")) == list(FEATURES)


def test_a_calibration_of_this_feature_list_renders_into_the_environment() -> None:
    env = one(render(calibration()), "ConfigMap", "-openwebui-env")["data"]
    assert json.loads(env[fitted.ENV])["features"] == list(FEATURES)


@pytest.mark.parametrize("features", [
    list(FEATURES[:-1]),  # a feature added since the fit
    [*FEATURES, "subject_absent"],  # a feature removed since
    [FEATURES[1], FEATURES[0], *FEATURES[2:]],  # the same names in another order: other coefficients
], ids=["added", "removed", "reordered"])
def test_a_calibration_of_another_feature_list_is_refused_with_the_refit_command(features: list[str]) -> None:
    message = error_line(calibration(features=features))
    assert "\n" not in message
    assert message.startswith("openwebui.gate.calibration was fitted on another feature list")
    assert "`ragfr gate calibrate`" in message and "docs/runbooks/gate-calibration.md" in message
