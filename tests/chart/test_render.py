"""Each scenario in charts/ragfr/examples renders, lints strict and validates strict on Kubernetes 1.29-1.33."""

from __future__ import annotations

import os

import helm_python as helm
import kubernetes_validate
import pytest
from tests.support.chart import (
    CHART,
    EXAMPLES,
    GOLDEN,
    KUBE_VERSIONS,
    example_values,
    normalized,
    render,
    with_image_source,
)

# Custom resources have no bundled schema: only these may be skipped by kubernetes-validate, and they
# get the structural checks of test_invariants instead.
CRD_GROUPS = ("postgresql.cnpg.io/", "barmancloud.cnpg.io/", "monitoring.coreos.com/", "cert-manager.io/",
              "gateway.networking.k8s.io/")

EXPECTED_SCENARIOS = {"default", "gpu", "external-db", "air-gapped", "replicas", "cnpg"}


def test_every_documented_scenario_has_an_example() -> None:
    assert EXPECTED_SCENARIOS <= set(EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES)
def test_lint_strict(example: str) -> None:
    for version in (KUBE_VERSIONS[0], KUBE_VERSIONS[-1]):
        report = helm.lint(CHART, with_image_source(example_values(example)), strict=True, kube_version=f"v{version}")
        problems = [m for m in report["messages"] if m["severity"] >= 2]
        assert not report["errors"] and not problems, (report["errors"], problems)


@pytest.mark.parametrize("example", EXAMPLES)
def test_kubernetes_validate_strict(example: str) -> None:
    docs = render(example_values(example))
    for version in KUBE_VERSIONS:
        for doc in docs:
            where = f"{example} {doc['kind']}/{doc['metadata']['name']} on {version}"
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.SchemaNotFoundError:
                assert doc["apiVersion"].startswith(CRD_GROUPS), f"no schema for {where}"
            except kubernetes_validate.ValidationError as err:
                path = ".".join(str(p) for p in err.path)
                pytest.fail(f"{where}: {path}: {err.message}")


@pytest.mark.parametrize("example", EXAMPLES)
def test_golden(example: str) -> None:
    """Rendered manifests are reviewed on change: RAGFR_UPDATE_GOLDEN=1 (make chart-golden) rewrites them."""
    text = normalized(render(example_values(example)))
    golden = GOLDEN / f"{example}.yaml"
    if os.environ.get("RAGFR_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
        return
    assert golden.exists(), f"{golden} missing: run `make chart-golden` and review the diff"
    assert text == golden.read_text(), (
        f"{example} renders differently from {golden.name}: run `make chart-golden`, review `git diff`, commit"
    )
