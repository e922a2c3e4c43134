"""Issue 36: where the nodes get the ragfr images (global.imageSource), who may reach Open WebUI without an admin
Secret, what NOTES tell the operator, and the interface language. Rendered by the chart itself (helm-python)."""

from __future__ import annotations

import re
from typing import Any

import helm_python as helm
import pytest
import yaml
from tests.support.chart import (
    CHART,
    EXAMPLES,
    NAMESPACE,
    RELEASE,
    chart,
    containers,
    error_line,
    example_values,
    one,
    pod_specs,
    render,
    render_raw,
    with_image_source,
)

OURS = ("ragdb", "ragfr", "owui-init", "reranker")
# Values under which every image of the chart renders: the reranker image and the backup's rclone included.
EVERY_IMAGE: dict[str, Any] = {
    "openwebui": {"env": {"RAG_RERANKING_MODEL": "ragfr/reranker-fr"}, "reranker": {"source": "image"}},
    "backup": {"enabled": True},
    "ragdb": {"metrics": {"enabled": True}},
    "redis": {"enabled": True},
}


def refusal(values: dict[str, Any]) -> str:
    """The chart's message for values that name no image source (rendered as given: no operator layer added)."""
    with pytest.raises(helm.HelmError) as refused:
        chart().render(values, name=RELEASE, namespace=NAMESPACE, revision=1, is_install=True)
    return re.sub(r"^execution error at \([^)]*\): ", "", str(refused.value).strip())


def images(values: dict[str, Any]) -> dict[str, str]:
    """Rendered image reference -> its pull policy, over every container of every pod."""
    found: dict[str, str] = {}
    for _, spec in pod_specs(render(values)):
        for _, c in containers(spec):
            found[c["image"]] = c.get("imagePullPolicy", "")
    return found


def test_a_render_with_no_values_refuses_and_names_both_ways() -> None:
    message = refusal({})
    assert message.startswith("the ragfr images (ragfr/ragdb, ragfr/ragfr, ragfr/owui-init) are published on no "
                              "public registry"), message
    assert "global.imageRegistry: <host:port>" in message and "global.imageSource: imported" in message
    assert "make run VALUES=my-values.yaml" in message and "k3s ctr images import" in message


def test_registry_source_without_a_registry_is_refused() -> None:
    assert refusal({"global": {"imageSource": "registry"}}) == (
        "global.imageSource=registry needs global.imageRegistry (host:port of the registry `make images-push "
        "REGISTRY=...` pushed to)")


def test_an_unknown_source_is_refused_by_the_schema() -> None:
    assert "imageSource" in error_line({"global": {"imageSource": "dockerhub"}})


def test_imported_names_localhost_images_that_are_never_pulled() -> None:
    # An operator's pullPolicy does not reopen the pull: a node that missed the import must not fetch a stranger's.
    found = images({**EVERY_IMAGE, "global": {"imageSource": "imported"},
                    "ragdb": {"image": {"pullPolicy": "IfNotPresent"}, "metrics": {"enabled": True}}})
    ours = {ref: policy for ref, policy in found.items() if "/ragfr/" in ref}
    assert {ref.split("/")[2].split(":")[0] for ref in ours} == set(OURS)
    assert all(ref.startswith("localhost/ragfr/") for ref in ours), ours
    assert set(ours.values()) == {"Never"}
    upstream = {ref: policy for ref, policy in found.items() if "/ragfr/" not in ref}
    assert "ghcr.io/open-webui/open-webui:v0.12.4" in upstream and set(upstream.values()) == {"IfNotPresent"}


def test_imported_with_a_registry_mirrors_only_the_upstream_images() -> None:
    found = images({**EVERY_IMAGE, "global": {"imageSource": "imported", "imageRegistry": "registry.lan:5000"}})
    assert all(ref.startswith("localhost/ragfr/") for ref in found if "/ragfr/" in ref), found
    assert all(ref.startswith("registry.lan:5000/") for ref in found if "/ragfr/" not in ref), found


def test_registry_names_the_registry_with_the_images_pull_policy() -> None:
    for values in ({"global": {"imageRegistry": "registry.lan:5000"}},
                   {"global": {"imageSource": "registry", "imageRegistry": "registry.lan:5000"}}):
        found = images({**EVERY_IMAGE, **values})
        assert all(ref.startswith("registry.lan:5000/") for ref in found), found
        assert set(found.values()) == {"IfNotPresent"}


@pytest.mark.parametrize("example", EXAMPLES)
def test_no_example_renders_a_bare_ragfr_image(example: str) -> None:
    # ragfr/<name> unqualified is docker.io/ragfr/<name>: a Docker Hub namespace this project does not own.
    for ref in images(with_image_source(example_values(example))):
        assert not ref.startswith(("ragfr/", "docker.io/ragfr/")), (example, ref)


def test_the_install_examples_say_imported_themselves() -> None:
    # The ones an operator copies to my-values.yaml as a whole; the others are layered over such a file.
    for example in ("default", "k3s-first-install"):
        assert example_values(example)["global"] == {"imageSource": "imported"}
        assert not re.search(r"pullPolicy: *Never", (CHART / "examples" / f"{example}.yaml").read_text())


# --- Open WebUI reachable from outside the cluster (issue 36 item 5) -------------------------------------------

@pytest.mark.parametrize("kind", ["LoadBalancer", "NodePort"])
def test_an_exposed_service_needs_the_admin_secret(kind: str) -> None:
    assert error_line({"openwebui": {"service": {"type": kind}}}).startswith(
        f"openwebui.service.type={kind} without openwebui.admin.existingSecret: the Service is reachable from "
        "outside the cluster and the first visitor to reach Open WebUI would become its admin")
    # Knowingly: the same escape as the ingress's, with the loud NOTES.
    notes = render_raw({"openwebui": {"service": {"type": kind}, "admin": {"allowFirstSignup": True}}})
    assert "THE FIRST SIGN-UP BECOMES ADMIN" in notes["ragfr/templates/NOTES.txt"]


def notes(values: dict[str, Any]) -> str:
    return render_raw(values)["ragfr/templates/NOTES.txt"]


def test_notes_give_the_load_balancers_address_not_a_port_forward() -> None:
    text = notes(example_values("lan-servicelb"))
    assert "port-forward" not in text
    assert "http://<EXTERNAL-IP>:8080/ (Service type LoadBalancer)" in text
    assert ("kubectl -n ragfr get svc ragfr-openwebui -o jsonpath='{.status.loadBalancer.ingress[*].ip}'"
            in text)


def test_notes_give_the_node_port_address() -> None:
    admin = {"existingSecret": "ragfr-admin"}
    text = notes({"openwebui": {"admin": admin, "service": {"type": "NodePort", "nodePort": 30080}}})
    assert "port-forward" not in text and "http://<NODE-IP>:30080/ (Service type NodePort)" in text
    assert "kubectl get nodes -o jsonpath=" in text and "InternalIP" in text
    # Kubernetes picks the port: NOTES say how to read it.
    text = notes({"openwebui": {"admin": admin, "service": {"type": "NodePort"}}})
    assert "http://<NODE-IP>:<NODE-PORT>/" in text
    assert "get svc ragfr-openwebui -o jsonpath='{.spec.ports[?(@.name==\"http\")].nodePort}'" in text
    # The port named there is the Service's http port.
    service = one(render({"openwebui": {"admin": admin, "service": {"type": "NodePort"}}}), "Service", "-openwebui")
    assert [p["name"] for p in service["spec"]["ports"]][0] == "http"


def test_a_cluster_ip_service_keeps_the_port_forward() -> None:
    assert "kubectl -n ragfr port-forward svc/ragfr-openwebui 8080:8080" in notes({})


# --- Smaller items of issue 36 (item 6) ------------------------------------------------------------------------

def test_notes_announce_a_reranker_cache_only_with_a_cross_encoder() -> None:
    assert "reranker" not in notes({}).split("Follow it:")[0]
    text = notes({"openwebui": {"env": {"RAG_RERANKING_MODEL": "ragfr/reranker-fr"},
                                "reranker": {"source": "image"}}})
    assert "reranker cache (ragfr/reranker-fr from image)" in text


def owui_env(values: dict[str, Any]) -> dict[str, str]:
    return dict(one(render(values), "ConfigMap", "-openwebui-env")["data"])


def test_the_interface_is_french_by_default_and_the_operator_can_change_it() -> None:
    assert owui_env({})["DEFAULT_LOCALE"] == "fr-FR"
    assert owui_env({"openwebui": {"env": {"DEFAULT_LOCALE": "en-US"}}})["DEFAULT_LOCALE"] == "en-US"
    # `make up` reads the same file (scripts/up.sh ENV_FILE).
    env_file = yaml.safe_load((CHART / "files" / "openwebui-env.yaml").read_text())
    assert env_file["DEFAULT_LOCALE"] == "fr-FR"


def test_the_gateway_example_makes_the_admin_secret_from_files() -> None:
    text = (CHART / "examples" / "gateway-api.yaml").read_text()
    assert "--from-literal" not in text.replace("a --from-literal password", "")
    assert "--from-file=admin-email --from-file=admin-password" in text
