"""Conventions operators know from other charts (issue 28 item 3): subchart globals, pull secrets, registries..."""

from __future__ import annotations

import pytest
from tests.support.chart import containers, env_of, error_line, example_values, normalized, one, pod_specs, render


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


WORKLOADS = {"ragdb": ("StatefulSet", "-ragdb"), "ollama": ("Deployment", "-ollama"),
             "openwebui": ("Deployment", "-openwebui"), "redis": ("Deployment", "-redis"),
             "migrations": ("Job", "-migrate-*"), "backup": ("CronJob", "-backup")}


def _pod_spec(doc: dict) -> dict:  # type: ignore[type-arg]
    if doc["kind"] == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]  # type: ignore[no-any-return]
    return doc["spec"]["template"]["spec"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_priority_class_and_spread_per_workload(workload: str) -> None:
    spread = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}
    values: dict = {"redis": {"enabled": True}, "backup": {"enabled": True}}  # type: ignore[type-arg]
    values.setdefault(workload, {}).update(priorityClassName="ragfr-high", topologySpreadConstraints=[spread])
    docs = render(values)
    kind, suffix = WORKLOADS[workload]
    spec = _pod_spec(one(docs, kind, suffix))
    assert spec["priorityClassName"] == "ragfr-high"
    (constraint,) = spec["topologySpreadConstraints"]
    # The workload's own pods: its selector labels, which its pod template carries.
    selector = constraint.pop("labelSelector")["matchLabels"]
    assert constraint == spread
    template = one(docs, kind, suffix)
    labels = (template["spec"]["jobTemplate"]["spec"]["template"] if kind == "CronJob"
              else template["spec"]["template"])["metadata"]["labels"]
    assert selector.items() <= labels.items() and "app.kubernetes.io/component" in selector
    # No other workload changes.
    for other, (k, s) in WORKLOADS.items():
        if other != workload:
            assert not {"priorityClassName", "topologySpreadConstraints"} & _pod_spec(one(docs, k, s)).keys(), other


def test_scheduling_is_absent_by_default_and_an_explicit_label_selector_is_kept() -> None:
    docs = render({"redis": {"enabled": True}, "backup": {"enabled": True}})
    for kind, suffix in WORKLOADS.values():
        assert not {"priorityClassName", "topologySpreadConstraints"} & _pod_spec(one(docs, kind, suffix)).keys()
    spec = _pod_spec(one(render(example_values("conventions")), "Deployment", "-openwebui"))
    assert spec["topologySpreadConstraints"][0]["labelSelector"] == {
        "matchLabels": {"app.kubernetes.io/component": "openwebui"}}
    assert "at '/ollama/topologySpreadConstraints/0'" in error_line(
        {"ollama": {"topologySpreadConstraints": [{"maxSkew": 1}]}})


def test_open_webui_service_annotations_and_node_port() -> None:
    svc = one(render(example_values("conventions")), "Service", "-openwebui")
    assert svc["metadata"]["annotations"] == {"external-dns.alpha.kubernetes.io/hostname": "chat.lan.example"}
    assert svc["spec"]["type"] == "NodePort"
    assert svc["spec"]["ports"] == [{"name": "http", "port": 8080, "targetPort": "http", "nodePort": 30080}]
    lb = one(render({"openwebui": {"service": {"type": "LoadBalancer", "nodePort": 31000},
                                   "admin": {"existingSecret": "ragfr-admin"}}}), "Service", "-openwebui")
    assert lb["spec"]["ports"][0]["nodePort"] == 31000
    default = one(render(), "Service", "-openwebui")
    assert "annotations" not in default["metadata"] and "nodePort" not in default["spec"]["ports"][0]
    assert default["spec"]["type"] == "ClusterIP"


def test_a_node_port_on_a_cluster_ip_service_is_refused() -> None:
    assert error_line({"openwebui": {"service": {"nodePort": 30080}}}) == (
        "openwebui.service.nodePort=30080 needs openwebui.service.type=NodePort or LoadBalancer"
        " (a ClusterIP Service has no node port)")


def test_service_account_created_annotated_and_used_by_every_pod() -> None:
    docs = render(example_values("conventions"))
    sa = one(docs, "ServiceAccount", "")
    assert sa["metadata"]["name"] == "ragfr"
    assert sa["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/ragfr"}
    assert sa["automountServiceAccountToken"] is False
    specs = list(pod_specs(docs))
    assert specs
    for obj, spec in specs:
        assert spec["serviceAccountName"] == "ragfr", obj["metadata"]["name"]
        assert spec["automountServiceAccountToken"] is False
    named = render({"serviceAccount": {"create": True, "name": "ragfr-pods"}})
    assert one(named, "ServiceAccount", "")["metadata"]["name"] == "ragfr-pods"


def test_an_existing_service_account_or_the_default_one() -> None:
    docs = render({"serviceAccount": {"name": "platform-sa"}})
    assert not [d for d in docs if d["kind"] == "ServiceAccount"]
    assert {spec["serviceAccountName"] for _, spec in pod_specs(docs)} == {"platform-sa"}
    default = render()
    assert not [d for d in default if d["kind"] == "ServiceAccount"]
    assert all("serviceAccountName" not in spec for _, spec in pod_specs(default))
    assert error_line({"serviceAccount": {"annotations": {"a": "b"}}}).startswith(
        "serviceAccount.annotations need serviceAccount.create=true")


def test_open_webui_extra_volumes_mounts_and_init_containers_come_after_the_charts() -> None:
    default = _pod_spec(one(render(), "Deployment", "-openwebui"))
    spec = _pod_spec(one(render(example_values("conventions")), "Deployment", "-openwebui"))
    # The chart's own, unchanged and first; the extras appended.
    assert spec["volumes"][:len(default["volumes"])] == default["volumes"]
    assert [v["name"] for v in spec["volumes"][len(default["volumes"]):]] == ["corporate-ca", "ca-bundle"]
    chart_inits = [c["name"] for c in default["initContainers"]]
    assert [c["name"] for c in spec["initContainers"]] == [*chart_inits, "ca-bundle"]
    main, default_main = spec["containers"][0], default["containers"][0]
    assert main["volumeMounts"][:-1] == default_main["volumeMounts"]
    assert main["volumeMounts"][-1] == {"name": "ca-bundle", "mountPath": "/etc/ssl/ragfr", "readOnly": True}


EXTRA_REFUSED = [
    ({"extraVolumes": [{"name": "data", "emptyDir": {}}]},
     "openwebui.extraVolumes[0].name=data is a volume of the chart"),
    ({"extraVolumes": [{"name": "x", "emptyDir": {}}, {"name": "x", "emptyDir": {}}]},
     "openwebui.extraVolumes[1].name=x is listed twice"),
    ({"extraVolumeMounts": [{"name": "nowhere", "mountPath": "/srv"}]},
     "openwebui.extraVolumeMounts[0].name=nowhere is not in openwebui.extraVolumes: add the volume there"),
    ({"extraVolumes": [{"name": "x", "emptyDir": {}}], "extraVolumeMounts": [{"name": "x", "mountPath": "/tmp/"}]},
     "openwebui.extraVolumeMounts[0].mountPath=/tmp/ is where the chart mounts its own volumes"),
    ({"extraInitContainers": [{"name": "wait-for-schema", "image": "busybox:1.36.1"}]},
     "openwebui.extraInitContainers[0].name=wait-for-schema is an init container of the chart"),
    ({"extraInitContainers": [{"name": "no-image"}]}, "at '/openwebui/extraInitContainers/0'"),
]


@pytest.mark.parametrize(("values", "expected"), EXTRA_REFUSED, ids=[e[:50] for _, e in EXTRA_REFUSED])
def test_extras_that_would_break_the_pod_are_refused(values: dict, expected: str) -> None:  # type: ignore[type-arg]
    message = error_line({"openwebui": values})
    assert expected in message, message


def test_external_redis_url_from_a_secret_never_reaches_the_config_map() -> None:
    docs = render(example_values("conventions"))
    spec = _pod_spec(one(docs, "Deployment", "-openwebui"))
    env = env_of(spec["containers"][0])
    for var in ("WEBSOCKET_REDIS_URL", "REDIS_URL"):
        assert env[var] == {"secretKeyRef": {"name": "ragfr-redis", "key": "url"}}
    config = one(docs, "ConfigMap", "-openwebui-env")["data"]
    assert "WEBSOCKET_REDIS_URL" not in config and "REDIS_URL" not in config
    assert config["WEBSOCKET_MANAGER"] == "redis" and config["ENABLE_WEBSOCKET_SUPPORT"] == "true"
    policy = one(docs, "NetworkPolicy", "-redis-clients")
    assert [p["port"] for rule in policy["spec"]["egress"] for p in rule["ports"]] == [6380]
    # Several replicas accept the Secret as their Redis.
    replicas = render({"redis": {"existingSecret": "ragfr-redis"}, "openwebui": {
        "replicas": 2, "persistence": {"accessModes": ["ReadWriteMany"]}}})
    assert env_of(one(replicas, "Deployment", "-openwebui")["spec"]["template"]["spec"]["containers"][0])[
        "REDIS_URL"] == {"secretKeyRef": {"name": "ragfr-redis", "key": "redis-url"}}


def test_external_redis_url_in_values_is_unchanged() -> None:
    docs = render({"redis": {"externalUrl": "redis://redis.lan:6381/0"}})
    config = one(docs, "ConfigMap", "-openwebui-env")["data"]
    assert config["REDIS_URL"] == config["WEBSOCKET_REDIS_URL"] == "redis://redis.lan:6381/0"
    env = env_of(one(docs, "Deployment", "-openwebui")["spec"]["template"]["spec"]["containers"][0])
    assert "REDIS_URL" not in env
    policy = one(docs, "NetworkPolicy", "-redis-clients")
    assert [p["port"] for rule in policy["spec"]["egress"] for p in rule["ports"]] == [6381]


@pytest.mark.parametrize(("values", "expected"), [
    ({"externalUrl": "redis://r:6379/0", "existingSecret": "s"},
     "redis.externalUrl and redis.existingSecret are exclusive"),
    ({"enabled": True, "existingSecret": "s"}, "redis.enabled=true and redis.existingSecret are exclusive"),
])
def test_redis_secret_conflicts_are_refused(values: dict, expected: str) -> None:  # type: ignore[type-arg]
    assert error_line({"redis": values}).startswith(expected)


def test_gateway_api_route_to_the_open_webui_service() -> None:
    docs = render(example_values("gateway-api"))
    route = one(docs, "HTTPRoute", "-openwebui")
    assert route["apiVersion"] == "gateway.networking.k8s.io/v1"
    svc = one(docs, "Service", "-openwebui")
    (rule,) = route["spec"]["rules"]
    # The whole host: Open WebUI serves from / only.
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/"}}]
    assert rule["backendRefs"] == [{"name": svc["metadata"]["name"], "port": svc["spec"]["ports"][0]["port"]}]
    # A streamed answer outlives a gateway's default request timeout (Envoy: 15 s).
    assert rule["timeouts"] == {"request": "10m"}
    assert route["spec"]["parentRefs"] == [{"name": "shared", "namespace": "envoy-gateway-system", "sectionName": "https"}]
    assert route["spec"]["hostnames"] == ["chat.example.fr"]
    moved = one(render({**example_values("gateway-api"), "openwebui": {
        **example_values("gateway-api")["openwebui"], "service": {"port": 80}}}), "HTTPRoute", "-openwebui")
    assert moved["spec"]["rules"][0]["backendRefs"][0]["port"] == 80
    assert not [d for d in render() if d["kind"] == "HTTPRoute"]


def test_gateway_api_route_without_hostnames_timeouts_or_extras_renders_none_of_them() -> None:
    route = one(render({"openwebui": {"admin": {"existingSecret": "a"}, "httpRoute": {
        "enabled": True, "parentRefs": [{"name": "gw"}], "labels": {"team": "x"}, "annotations": {"a": "b"}}}}),
        "HTTPRoute", "-openwebui")
    assert "hostnames" not in route["spec"] and "timeouts" not in route["spec"]["rules"][0]
    assert route["metadata"]["labels"]["team"] == "x" and route["metadata"]["annotations"] == {"a": "b"}


def _openwebui_ingress(values: dict) -> list:  # type: ignore[type-arg]
    return one(render(values), "NetworkPolicy", "-openwebui")["spec"]["ingress"]  # type: ignore[no-any-return]


def test_gateway_pods_reach_open_webui_through_the_network_policy() -> None:
    gateway = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "envoy-gateway-system"}},
               "podSelector": {"matchLabels": {"app.kubernetes.io/component": "proxy"}}}
    rules = _openwebui_ingress(example_values("gateway-api"))
    assert rules[0] == {"from": [gateway], "ports": [{"port": 8080, "protocol": "TCP"}]}
    # helm test still reaches it.
    assert rules[1]["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "test"
    # Beside an ingress controller already admitted: both.
    traefik = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}
    both = _openwebui_ingress({**example_values("gateway-api"), "networkPolicy": {"openwebuiFrom": [traefik]}})
    assert both[0]["from"] == [traefik, gateway]
    # No peers at all: anyone, as without a route.
    open_route = {"openwebui": {"admin": {"existingSecret": "a"},
                                "httpRoute": {"enabled": True, "parentRefs": [{"name": "gw"}]}}}
    assert _openwebui_ingress(open_route) == [{"ports": [{"port": 8080, "protocol": "TCP"}]}]


@pytest.mark.parametrize(("values", "message"), [
    ({"openwebui": {"admin": {"existingSecret": "a"}, "httpRoute": {"enabled": True}}},
     "openwebui.httpRoute.enabled=true needs openwebui.httpRoute.parentRefs"),
    ({"openwebui": {"httpRoute": {"enabled": True, "parentRefs": [{"name": "gw"}]}}},
     "openwebui.httpRoute.enabled=true without openwebui.admin.existingSecret: the first visitor"),
    ({"openwebui": {"httpRoute": {"networkPolicyFrom": [{"podSelector": {}}]}}},
     "openwebui.httpRoute.networkPolicyFrom is set but openwebui.httpRoute.enabled=false"),
    ({"openwebui": {"httpRoute": {"timeouts": {"request": "10 minutes"}}}}, "/openwebui/httpRoute/timeouts/request"),
    ({"openwebui": {"httpRoute": {"hostnames": ["Chat.Example.fr"]}}}, "/openwebui/httpRoute/hostnames/0"),
    ({"openwebui": {"httpRoute": {"parentRefs": [{"namespace": "gw"}]}}}, "/openwebui/httpRoute/parentRefs/0"),
])
def test_gateway_api_route_refusals(values: dict, message: str) -> None:  # type: ignore[type-arg]
    assert message in error_line(values)


def _owui(docs: list) -> dict:  # type: ignore[type-arg]
    return one(docs, "Deployment", "-openwebui")["spec"]  # type: ignore[no-any-return]


# The chart names no cross-encoder by default (issue 29); the cache is for a site that names one.
NAMED = {"env": {"RAG_RERANKING_MODEL": "cross-encoder/ms-marco-MiniLM-L-6-v2"}}


def test_reranker_cache_on_a_pvc_survives_restarts() -> None:
    docs = render(example_values("reranker-cache"))
    pvc = one(docs, "PersistentVolumeClaim", "-reranker-cache")
    assert pvc["spec"] == {"accessModes": ["ReadWriteOnce"], "storageClassName": "local-path",
                           "resources": {"requests": {"storage": "4Gi"}}}
    spec = _owui(docs)
    pod = spec["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "hf-cache"]
    assert volume == {"name": "hf-cache", "persistentVolumeClaim": {"claimName": pvc["metadata"]["name"]}}
    init = {c["name"]: c for c in pod["initContainers"]}
    # The init container downloads into it; Open WebUI only reads it.
    assert {"name": "hf-cache", "mountPath": "/opt/hf-cache", "readOnly": False} in init["cache-reranker"]["volumeMounts"]
    assert {"name": "hf-cache", "mountPath": "/opt/hf-cache", "readOnly": True} in pod["containers"][0]["volumeMounts"]
    assert env_of(init["cache-reranker"])["RERANKER_SOURCE"] == "download"
    # The non-root init container can write a fresh volume.
    assert pod["securityContext"]["fsGroup"] == init["cache-reranker"]["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["fsGroupChangePolicy"] == "OnRootMismatch"
    # A ReadWriteOnce cache cannot follow a rolling update onto another node, even with a RWX data volume.
    assert spec["strategy"] == {"type": "Recreate"}
    rwx_data = {**example_values("reranker-cache")["openwebui"], "persistence": {"accessModes": ["ReadWriteMany"]}}
    assert _owui(render({"openwebui": rwx_data}))["strategy"] == {"type": "Recreate"}
    assert "strategy" not in _owui(render({"openwebui": {"persistence": {"accessModes": ["ReadWriteMany"]}}}))


def test_reranker_cache_is_off_by_default_and_an_existing_claim_is_used_as_is() -> None:
    docs = render()
    assert not [d for d in docs if d["metadata"]["name"].endswith("-reranker-cache")]
    pod = _owui(docs)["template"]["spec"]
    assert [v for v in pod["volumes"] if v["name"] == "hf-cache"][0]["emptyDir"] == {"sizeLimit": "2Gi"}
    assert "fsGroup" not in pod["securityContext"]
    own = render({"openwebui": {**NAMED, "reranker": {"cache": {"enabled": True, "existingClaim": "hf-models"}}}})
    assert not [d for d in own if d["kind"] == "PersistentVolumeClaim" and "reranker" in d["metadata"]["name"]]
    (volume,) = [v for v in _owui(own)["template"]["spec"]["volumes"] if v["name"] == "hf-cache"]
    assert volume["persistentVolumeClaim"] == {"claimName": "hf-models"}


def test_reranker_cache_shared_by_replicas_needs_read_write_many() -> None:
    replicas = example_values("replicas")
    cached = {**replicas, "openwebui": {**replicas["openwebui"], **NAMED, "reranker": {"cache": {"enabled": True}}}}
    assert error_line(cached) == (
        "openwebui.replicas=3 share the reranker cache, which a ReadWriteOnce volume cannot be on several nodes: "
        "set openwebui.reranker.cache.accessModes to [ReadWriteMany] (Longhorn, NFS) or give an existingClaim "
        "every node can mount")
    for cache in ({"enabled": True, "accessModes": ["ReadWriteMany"]}, {"enabled": True, "existingClaim": "hf"}):
        docs = render({**replicas, "openwebui": {**replicas["openwebui"], **NAMED, "reranker": {"cache": cache}}})
        assert "strategy" not in _owui(docs)


@pytest.mark.parametrize(("source", "given"), [("pvc", {"existingClaim": "hf"}),
                                              ("image", {"image": {"repository": "reg/hf", "tag": "1"}})])
def test_reranker_cache_needs_the_download_source(source: str, given: dict) -> None:  # type: ignore[type-arg]
    reranker = {"source": source, "cache": {"enabled": True}, **given}
    assert error_line({"openwebui": {**NAMED, "reranker": reranker}}).startswith(
        f"openwebui.reranker.cache.enabled=true needs openwebui.reranker.source=download (source={source}")
