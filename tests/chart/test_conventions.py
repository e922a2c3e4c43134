"""Conventions operators know from other charts (issue 28 item 3): subchart globals, pull secrets, registries..."""

from __future__ import annotations

import pytest
from tests.support.chart import containers, error_line, example_values, normalized, one, pod_specs, render


def test_parent_chart_globals_and_the_enabled_condition_are_accepted() -> None:
    # As a subchart the chart receives the parent's globals and its dependency condition key (helm/helm#10392).
    values = {"enabled": True, "global": {"storageClass": "longhorn", "postgresql": {"auth": {"username": "x"}},
                                          "imageRegistry": "registry.internal:5000"}}
    assert normalized(render(values)) == normalized(render({"global": {"imageRegistry": "registry.internal:5000"}}))
    # Only `global` is open: a typo elsewhere is still refused.
    assert "additional properties 'enabeld' not allowed" in error_line({"enabeld": True})


def test_image_pull_secrets_take_names_and_name_objects_on_every_pod() -> None:
    docs = render({"global": {"imagePullSecrets": [{"name": "regcred"}, "mirror"]}})
    specs = list(pod_specs(docs))
    assert specs
    for obj, spec in specs:
        assert spec["imagePullSecrets"] == [{"name": "regcred"}, {"name": "mirror"}], obj["metadata"]["name"]
    cluster = one(render({**example_values("cnpg"),
                          "global": {"imagePullSecrets": [{"name": "regcred"}]}}), "Cluster", "")
    assert cluster["spec"]["imagePullSecrets"] == [{"name": "regcred"}]


def test_image_pull_secrets_refuse_objects_without_a_name() -> None:
    assert "/global/imagePullSecrets/0" in error_line({"global": {"imagePullSecrets": [{"secret": "regcred"}]}})
    assert "/global/imagePullSecrets/0" in error_line({"global": {"imagePullSecrets": [""]}})


@pytest.mark.parametrize(("repository", "expected"), [
    ("ollama/ollama", "registry.internal:5000/ollama/ollama:0.12.10"),
    ("docker.io/ollama/ollama", "registry.internal:5000/ollama/ollama:0.12.10"),
    ("ghcr.io/ollama/ollama", "registry.internal:5000/ollama/ollama:0.12.10"),
    ("quay.example:8443/team/ollama", "registry.internal:5000/team/ollama:0.12.10"),
    ("localhost/ollama", "registry.internal:5000/ollama:0.12.10"),
    ("ollama", "registry.internal:5000/ollama:0.12.10"),
])
def test_image_registry_replaces_the_registry_part(repository: str, expected: str) -> None:
    docs = render({"global": {"imageRegistry": "registry.internal:5000/"}, "ollama": {"image": {"repository": repository}}})
    assert one(docs, "Deployment", "-ollama")["spec"]["template"]["spec"]["containers"][0]["image"] == expected


def test_image_registry_moves_open_webui_off_ghcr_and_leaves_references_alone_without_it() -> None:
    images = {c["image"] for _, spec in pod_specs(render({"global": {"imageRegistry": "registry.internal:5000"}}))
              for _, c in containers(spec)}
    assert "registry.internal:5000/open-webui/open-webui:v0.12.4" in images
    assert all(i.startswith("registry.internal:5000/") and "ghcr.io" not in i for i in images), images
    default = {c["image"] for _, spec in pod_specs(render()) for _, c in containers(spec)}
    assert "ghcr.io/open-webui/open-webui:v0.12.4" in default and "ollama/ollama:0.12.10" in default
