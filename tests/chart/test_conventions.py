"""Conventions operators know from other charts (issue 28 item 3): subchart globals, pull secrets, registries..."""

from __future__ import annotations

from tests.support.chart import error_line, normalized, render


def test_parent_chart_globals_and_the_enabled_condition_are_accepted() -> None:
    # As a subchart the chart receives the parent's globals and its dependency condition key (helm/helm#10392).
    values = {"enabled": True, "global": {"storageClass": "longhorn", "postgresql": {"auth": {"username": "x"}},
                                          "imageRegistry": "registry.internal:5000"}}
    assert normalized(render(values)) == normalized(render({"global": {"imageRegistry": "registry.internal:5000"}}))
    # Only `global` is open: a typo elsewhere is still refused.
    assert "additional properties 'enabeld' not allowed" in error_line({"enabeld": True})
