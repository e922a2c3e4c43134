"""Default deny for ingress AND egress, then exact allows, in every database mode: checked with a small
evaluator of the rendered NetworkPolicies (Kubernetes semantics: a flow passes when an egress policy of
the source and an ingress policy of the destination both allow it, or when no policy of that type
selects the pod)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.chart import EXAMPLES, Doc, example_values, one, pod_specs, render

INTERNET = {"_external": "true"}  # labels of "somewhere outside the cluster"
DNS = {"k8s-app": "kube-dns", "_ns": "kube-system"}


def _matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def _peer_matches(peer: dict[str, Any], labels: dict[str, str]) -> bool:
    if "ipBlock" in peer:
        return "_external" in labels
    if "_external" in labels:
        return False
    if "namespaceSelector" in peer:  # other namespaces: only the DNS stand-in lives there here
        ns = peer["namespaceSelector"].get("matchLabels", {}).get("kubernetes.io/metadata.name")
        return labels.get("_ns") == ns and _matches(peer.get("podSelector", {}), labels)
    return "_ns" not in labels and _matches(peer["podSelector"], labels)


def _rule_allows(rule: dict[str, Any], peer_key: str, labels: dict[str, str], port: int) -> bool:
    ports = rule.get("ports")
    if ports is not None and not any(p["port"] == port for p in ports):
        return False
    peers = rule.get(peer_key)
    return peers is None or any(_peer_matches(p, labels) for p in peers)


def allowed(docs: list[Doc], src: dict[str, str], dst: dict[str, str], port: int) -> bool:
    pols = [d["spec"] for d in docs if d["kind"] == "NetworkPolicy"]

    def side(kind: str, own: dict[str, str], other: dict[str, str], peer_key: str) -> bool:
        if "_external" in own or "_ns" in own:
            return True  # not ours to police
        selecting = [p for p in pols if kind in p["policyTypes"] and _matches(p["podSelector"], own)]
        return not selecting or any(_rule_allows(r, peer_key, other, port)
                                    for p in selecting for r in p.get(kind.lower(), []))

    return side("Egress", src, dst, "to") and side("Ingress", dst, src, "from")


def pod_labels(docs: list[Doc], kind: str, suffix: str) -> dict[str, str]:
    obj = one(docs, kind, suffix)
    return obj["metadata"]["labels"] if kind == "Pod" else obj["spec"]["template"]["metadata"]["labels"]


def cnpg_labels(docs: list[Doc]) -> dict[str, str]:
    cluster = one(docs, "Cluster", "-db")
    return {**cluster["spec"]["inheritedMetadata"]["labels"], "cnpg.io/cluster": cluster["metadata"]["name"]}


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_pod_of_the_release_is_default_deny_both_ways(example: str) -> None:
    docs = render(example_values(example))
    deny = one(docs, "NetworkPolicy", "-default-deny")["spec"]
    assert deny["policyTypes"] == ["Ingress", "Egress"] and deny["ingress"] == [] and deny["egress"] == []
    for obj, _ in pod_specs(docs):
        labels = obj["metadata"]["labels"] if obj["kind"] == "Pod" else obj["spec"]["template"]["metadata"]["labels"]
        assert _matches(deny["podSelector"], labels), obj["metadata"]["name"]
    for obj in docs:
        if obj["kind"] == "CronJob":
            labels = obj["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
            assert _matches(deny["podSelector"], labels)
            assert allowed(docs, labels, DNS, 53)
        if obj["kind"] == "Cluster":
            assert _matches(deny["podSelector"], cnpg_labels(docs))
    for obj, _ in pod_specs(docs):
        labels = obj["metadata"]["labels"] if obj["kind"] == "Pod" else obj["spec"]["template"]["metadata"]["labels"]
        assert allowed(docs, labels, DNS, 53), obj["metadata"]["name"]


@pytest.mark.parametrize("example", ["default", "cnpg", "external-db", "air-gapped", "replicas", "lan-traefik"])
def test_the_stack_flows_pass_and_nothing_else(example: str) -> None:
    docs = render(example_values(example))
    mode = example_values(example).get("database", {}).get("mode", "internal")
    owui = pod_labels(docs, "Deployment", "-openwebui")
    migrate = pod_labels(docs, "Job", "-migrate-*")
    test = pod_labels(docs, "Pod", "-test")
    if mode == "internal":
        db = pod_labels(docs, "StatefulSet", "-ragdb")
    elif mode == "cnpg":
        db = cnpg_labels(docs)
    else:
        db = INTERNET
    for client in (owui, migrate, test):
        assert allowed(docs, client, db, 5432)
    assert allowed(docs, test, owui, 8080)
    # Open WebUI's port is open to every peer unless networkPolicy.openwebuiFrom narrows it (lan-traefik: Traefik's
    # pods only; tests/docs/test_install_walk.py checks that Traefik stays admitted when examples are layered).
    narrowed = bool(example_values(example).get("networkPolicy", {}).get("openwebuiFrom"))
    assert allowed(docs, INTERNET, owui, 8080) is not narrowed
    assert not allowed(docs, owui, db, 22) and not allowed(docs, owui, INTERNET, 80)
    ollama = pod_labels(docs, "Deployment", "-ollama")
    assert allowed(docs, owui, ollama, 11434)
    assert not allowed(docs, ollama, db, 5432)  # Ollama never needs the database
    assert not allowed(docs, ollama, owui, 8080)
    if mode != "external":
        # CNPG instance managers call the API server (443/6443, any address unless apiServerCIDR is set).
        assert allowed(docs, db, INTERNET, 443) == (mode == "cnpg")
        assert not allowed(docs, db, INTERNET, 80)
        assert not allowed(docs, INTERNET, db, 5432)
    pulls = example != "air-gapped"
    assert allowed(docs, ollama, INTERNET, 443) == pulls
    # No reranker download: none of these names a cross-encoder to download (none by default; air-gapped's
    # comes from a volume). test_https_out_only_for_the_pods_that_download covers one that does.
    assert not allowed(docs, owui, INTERNET, 443)
    if example == "replicas":
        redis = pod_labels(docs, "Deployment", "-redis")
        assert allowed(docs, owui, redis, 6379) and not allowed(docs, migrate, redis, 6379)


def test_cnpg_instances_replicate_and_answer_the_operator() -> None:
    docs = render(example_values("cnpg"))
    db = cnpg_labels(docs)
    assert allowed(docs, db, db, 5432)
    operator = {"_ns": "cnpg-system"}
    pol = one(docs, "NetworkPolicy", "-db")["spec"]
    assert any(_rule_allows(r, "from", operator, 8000) for r in pol["ingress"])
    assert allowed(docs, db, INTERNET, 6443)  # the API server (networkPolicy.apiServerCIDR narrows it)


def test_cnpg_instances_exporter_is_open_to_the_scrapers_only() -> None:
    """Each CloudNativePG instance serves its exporter on 9187 (docs/runbooks/monitoring.md): Prometheus in
    metrics.scrapeFrom's namespace reaches it, the UI's clients and the release's other pods do not."""
    docs = render(example_values("cnpg"))
    db = cnpg_labels(docs)
    assert allowed(docs, {"_ns": "monitoring"}, db, 9187)
    assert not allowed(docs, INTERNET, db, 9187)
    assert not allowed(docs, pod_labels(docs, "Deployment", "-openwebui"), db, 9187)
    narrowed = render({**example_values("cnpg"), "metrics": {"scrapeFrom": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "observability"}}}]}})
    assert allowed(narrowed, {"_ns": "observability"}, cnpg_labels(narrowed), 9187)
    assert not allowed(narrowed, {"_ns": "monitoring"}, cnpg_labels(narrowed), 9187)


def test_s3_backups_get_egress_to_the_endpoint_port_only() -> None:
    docs = render(example_values("backup-s3"))
    cron = one(docs, "CronJob", "-backup")
    labels = cron["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    pol = one(docs, "NetworkPolicy", "-backup")["spec"]
    assert [p["port"] for r in pol["egress"] for p in r["ports"]] == [9000]
    assert pol["egress"][0]["to"] == example_values("backup-s3")["networkPolicy"]["externalTo"]
    assert allowed(docs, labels, pod_labels(docs, "StatefulSet", "-ragdb"), 5432)


def test_embedding_migration_jobs_reach_the_database_ollama_and_the_api_server() -> None:
    """The Job `ragfr embeddings k8s` creates (labels from the product's own manifest code) is default-deny
    like every pod of the release, and keeps exactly what its run needs."""
    from types import SimpleNamespace

    from ragfr.embmigrate.k8s.manifests import NETWORK_LABELS, labels

    docs = render()
    pod = {**labels(SimpleNamespace(release="ragfr", target_key="t")), **NETWORK_LABELS}  # type: ignore[arg-type]
    assert _matches(one(docs, "NetworkPolicy", "-default-deny")["spec"]["podSelector"], pod)
    assert allowed(docs, pod, pod_labels(docs, "StatefulSet", "-ragdb"), 5432)
    assert allowed(docs, pod, pod_labels(docs, "Deployment", "-ollama"), 11434)
    assert allowed(docs, pod, INTERNET, 443) and allowed(docs, pod, INTERNET, 6443)
    assert not allowed(docs, pod, INTERNET, 80)
    narrowed = render({"networkPolicy": {"apiServerCIDR": "10.43.0.1/32"}})
    assert one(narrowed, "NetworkPolicy", "-embmigrate")["spec"]["egress"][0]["to"] == [
        {"ipBlock": {"cidr": "10.43.0.1/32"}}]


def test_https_out_only_for_the_pods_that_download() -> None:
    """Issue 25 item 5 (Low): TCP 443 to the internet only where a download runs. Ollama's SERVER pulls the
    models (the pull Job only calls its API, so the Job gets no internet); Open WebUI's pod downloads the
    reranker in an init container, and a NetworkPolicy selects pods, not containers, so its rule lasts the
    pod's life (docs/install.md): it is dropped when nothing is downloaded, and networkPolicy.downloadTo
    narrows both rules to a proxy or mirror."""
    named = {"env": {"RAG_RERANKING_MODEL": "cross-encoder/ms-marco-MiniLM-L-6-v2"}}
    docs = render({"openwebui": named})
    owui, ollama = pod_labels(docs, "Deployment", "-openwebui"), pod_labels(docs, "Deployment", "-ollama")
    pull = pod_labels(docs, "Job", "-pull-models-*")
    assert allowed(docs, ollama, INTERNET, 443) and allowed(docs, owui, INTERNET, 443)
    assert not allowed(docs, pull, INTERNET, 443) and allowed(docs, pull, ollama, 11434)
    # No cross-encoder configured (the default): no download, no 443 for Open WebUI.
    docs = render({})
    assert not allowed(docs, pod_labels(docs, "Deployment", "-openwebui"), INTERNET, 443)
    assert allowed(docs, pod_labels(docs, "Deployment", "-ollama"), INTERNET, 443)
    # Nothing pulled: no 443 for Ollama either.
    docs = render({"ollama": {"models": {"pull": False}}, "openwebui": {**named, "reranker": {"source": "pvc",
                                                                                     "existingClaim": "hf"}}})
    assert not allowed(docs, pod_labels(docs, "Deployment", "-ollama"), INTERNET, 443)
    assert not allowed(docs, pod_labels(docs, "Deployment", "-openwebui"), INTERNET, 443)
    # downloadTo: both download rules go to those peers only, on 443 only.
    proxy = [{"ipBlock": {"cidr": "10.0.0.5/32"}}]
    docs = render({"networkPolicy": {"downloadTo": proxy}, "openwebui": named})
    for suffix in ("-ollama", "-openwebui"):
        assert one(docs, "NetworkPolicy", suffix)["spec"]["egress"] == [
            {"to": proxy, "ports": [{"port": 443, "protocol": "TCP"}]}]

