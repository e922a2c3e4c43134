"""Properties every rendered scenario must keep, checked on the real render (no cluster)."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from tests.support.chart import (
    CHART,
    EXAMPLES,
    Doc,
    containers,
    env_of,
    error_line,
    example_values,
    one,
    pod_specs,
    render,
)
from tests.support.paths import REPO

from ragfr.cli import build_parser

OWUI_ENV_CONTRACT = {
    "VECTOR_DB": "pgvector",
    "PGVECTOR_INDEX_METHOD": "hnsw",
    "PGVECTOR_HNSW_M": "16",
    "PGVECTOR_HNSW_EF_CONSTRUCTION": "64",
    "ENABLE_RAG_HYBRID_SEARCH": "true",
    "RAG_TOP_K": "20",
    "RAG_TOP_K_RERANKER": "3",
    # No cross-encoder by default (issue 29: none beat the fused order, docs/retrieval-quality.md).
    "RAG_RERANKING_MODEL": "",
    "RAG_EMBEDDING_ENGINE": "ollama",
    "ENABLE_PERSISTENT_CONFIG": "false",
    "OFFLINE_MODE": "true",
}


def owui_env(docs: list[Doc]) -> dict[str, Any]:
    """Open WebUI's effective env: the ConfigMap it loads, overridden by its explicit env entries."""
    deployment = one(docs, "Deployment", "-openwebui")
    main = deployment["spec"]["template"]["spec"]["containers"][0]
    cm_name = main["envFrom"][0]["configMapRef"]["name"]
    cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == cm_name)
    return {**cm["data"], **env_of(main)}


def migrate_args(docs: list[Doc]) -> argparse.Namespace:
    """The migrations Job's command, parsed by the real ragfr CLI parser (fails if the flags drift)."""
    job = one(docs, "Job", "-migrate-*")
    main = job["spec"]["template"]["spec"]["containers"][0]
    return build_parser().parse_args([*main["command"][1:], *main["args"]])


@pytest.mark.parametrize("example", EXAMPLES)
def test_embedding_dims_identical_in_migrations_and_open_webui(example: str) -> None:
    docs = render(example_values(example))
    args = migrate_args(docs)
    env = owui_env(docs)
    assert args.dims == int(env["PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH"])
    assert args.embedding_model == f"ollama:{env['RAG_EMBEDDING_MODEL']}"


@pytest.mark.parametrize("example", EXAMPLES)
def test_open_webui_names_the_space_model_when_it_writes(example: str) -> None:
    """Migration 0009 checks a vector against ragfr.writer_model, which Open WebUI's URL sets through libpq."""
    docs = render(example_values(example))
    query = parse_qs(urlsplit(owui_env(docs)["PGVECTOR_DB_URL"]).query)
    assert query["options"] == [f"-c ragfr.writer_model={migrate_args(docs).embedding_model}"]


def test_changing_the_embedding_space_moves_both_sides() -> None:
    docs = render({"embedding": {"model": "nomic-embed-text:v1.5", "dims": 768}})
    assert migrate_args(docs).dims == 768
    assert owui_env(docs)["PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH"] == "768"
    assert owui_env(docs)["RAG_EMBEDDING_MODEL"] == "nomic-embed-text:v1.5"
    pull = one(docs, "Job", "-pull-models-*")["spec"]["template"]["spec"]["containers"][0]
    assert env_of(pull)["OLLAMA_PULL_MODELS"].split()[0] == "nomic-embed-text:v1.5"


@pytest.mark.parametrize("example", EXAMPLES)
def test_open_webui_env_contract(example: str) -> None:
    values = example_values(example)
    env = owui_env(render(values))
    # The examples that run a cross-encoder name it; every other setting of the contract holds everywhere.
    contract = {**OWUI_ENV_CONTRACT, "RAG_RERANKING_MODEL": values.get("openwebui", {}).get("env", {}).get(
        "RAG_RERANKING_MODEL", OWUI_ENV_CONTRACT["RAG_RERANKING_MODEL"])}
    assert {k: env.get(k) for k in contract} == contract
    assert "RAG_RELEVANCE_THRESHOLD" in env
    for computed in ("PGVECTOR_DB_URL", "DATABASE_URL", "WEBUI_SECRET_KEY"):
        assert computed in env, computed


def test_env_file_is_a_flat_map_of_strings() -> None:
    data = yaml.safe_load((CHART / "files" / "openwebui-env.yaml").read_text())
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()), data
    assert data["RAG_TOP_K_RERANKER"] == "3"


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_container_has_resources_and_a_hardened_security_context(example: str) -> None:
    for obj, spec in pod_specs(render(example_values(example))):
        assert spec.get("automountServiceAccountToken") is False, obj["metadata"]["name"]
        pod_seccomp = spec.get("securityContext", {}).get("seccompProfile", {}).get("type")
        for _, c in containers(spec):
            where = f"{obj['kind']}/{obj['metadata']['name']}:{c['name']}"
            res = c.get("resources", {})
            assert res.get("requests", {}).get("memory") and res.get("limits", {}).get("memory"), where
            sec = c.get("securityContext")
            assert sec, where
            assert sec["allowPrivilegeEscalation"] is False, where
            assert sec["capabilities"]["drop"] == ["ALL"], where
            assert "privileged" not in sec or sec["privileged"] is False, where
            assert (sec.get("seccompProfile", {}).get("type") or pod_seccomp) == "RuntimeDefault", where


# Open WebUI's stock image runs as root and writes into its package dir (documented in docs/install.md).
# db-passfile runs as Open WebUI's user, whatever it is: libpq reads only a password file that its owner
# alone can read (0600), and root with every capability dropped cannot read another user's 0600 file.
ROOT_EXCEPTIONS = {"open-webui", "db-passfile"}


@pytest.mark.parametrize("example", EXAMPLES)
def test_non_root_and_read_only_except_documented_exceptions(example: str) -> None:
    for obj, spec in pod_specs(render(example_values(example))):
        pod_sec = spec.get("securityContext", {})
        for _, c in containers(spec):
            if c["name"] in ROOT_EXCEPTIONS:
                continue
            sec = c["securityContext"]
            where = f"{obj['kind']}/{obj['metadata']['name']}:{c['name']}"
            assert sec.get("runAsNonRoot", pod_sec.get("runAsNonRoot")) is True, where
            assert sec.get("runAsUser", pod_sec.get("runAsUser", 0)) != 0, where
            assert sec["readOnlyRootFilesystem"] is True, where


@pytest.mark.parametrize("example", EXAMPLES)
def test_long_running_containers_have_probes(example: str) -> None:
    for obj, spec in pod_specs(render(example_values(example))):
        if obj["kind"] not in ("Deployment", "StatefulSet"):
            continue
        for c in spec["containers"]:
            where = f"{obj['kind']}/{obj['metadata']['name']}:{c['name']}"
            assert "readinessProbe" in c and "livenessProbe" in c, where


@pytest.mark.parametrize("example", EXAMPLES)
def test_images_are_pinned(example: str) -> None:
    images = [c["image"] for _, spec in pod_specs(render(example_values(example))) for _, c in containers(spec)]
    for image in images:
        repo, _, tag = image.rpartition(":")
        assert repo and tag and tag != "latest" and "/" not in tag, image
    # global.imageRegistry replaces ghcr.io (air-gapped: registry.internal:5000/open-webui/open-webui).
    assert any(i.endswith("open-webui/open-webui:v0.12.4") for i in images)
    assert not any(i.endswith("ollama/ollama:latest") for i in images)


def test_latest_is_refused_with_a_clear_message() -> None:
    from tests.support.chart import error_line

    assert error_line({"ollama": {"image": {"tag": "latest"}}}) == (
        'image ollama/ollama: the tag "latest" is not allowed; pin a version'
    )


def test_air_gapped_prefixes_every_image_and_downloads_nothing() -> None:
    docs = render(example_values("air-gapped"))
    for _, spec in pod_specs(docs):
        assert spec["imagePullSecrets"] == [{"name": "internal-registry"}]
        for _, c in containers(spec):
            assert c["image"].startswith("registry.internal:5000/"), c["image"]
    assert not [d for d in docs if d["metadata"]["name"].startswith("ragfr-pull-models")]
    init = {c["name"]: c for c in one(docs, "Deployment", "-openwebui")["spec"]["template"]["spec"]["initContainers"]}
    assert env_of(init["cache-reranker"])["RERANKER_SOURCE"] == "pvc"


def test_no_plaintext_secret_in_default_values() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{path}.{k}")
        elif isinstance(node, str) and node:
            leaf = path.rsplit(".", 1)[-1].lower()
            # "...PasswordKey" names a key inside a Secret; a value under "password"/"token" would be one.
            assert not (leaf.endswith(("password", "token", "secretkey"))), path

    walk(values, "")
    for doc in render():
        if doc["kind"] == "Secret":
            # Generated at render time; nothing comes from values.
            assert all(len(v) >= 40 for v in doc["data"].values())


def test_checksum_annotations_roll_pods_on_config_change() -> None:
    def annotations(values: dict[str, Any]) -> dict[str, str]:
        tpl = one(render(values), "Deployment", "-openwebui")["spec"]["template"]
        return tpl["metadata"]["annotations"]

    base = annotations({})
    assert base["checksum/env"] != annotations({"openwebui": {"env": {"RAG_TOP_K": "30"}}})["checksum/env"]
    patched = annotations({"openwebui": {"patch": {"files": ["open_webui/retrieval/utils.py"]}}})
    assert base["checksum/patch"] != patched["checksum/patch"]
    db = lambda v: one(render(v), "StatefulSet", "-ragdb")["spec"]["template"]["metadata"]["annotations"]  # noqa: E731
    assert db({})["checksum/settings"] != db({"ragdb": {"settings": {"work_mem": "32MB"}}})["checksum/settings"]


def test_open_webui_starts_only_after_the_schema_and_the_patch() -> None:
    docs = render()
    spec = one(docs, "Deployment", "-openwebui")["spec"]["template"]["spec"]
    names = [c["name"] for c in spec["initContainers"]]
    assert names == ["wait-for-schema", "wait-for-grants", "db-passfile", "copy-stock-openwebui", "apply-french-patch"]
    ranked = one(render({"openwebui": {"env": {"RAG_RERANKING_MODEL": "cross-encoder/ms-marco-MiniLM-L-6-v2"}}}),
                 "Deployment", "-openwebui")["spec"]["template"]["spec"]
    assert [c["name"] for c in ranked["initContainers"]] == names + ["cache-reranker"]
    wait = spec["initContainers"][0]
    # $(VAR) in args expanded as the kubelet does, from the ConfigMap entries the container's env points at.
    cm = owui_env(docs)
    refs = {e["name"]: cm[e["valueFrom"]["configMapKeyRef"]["key"]] for e in wait["env"]
            if "configMapKeyRef" in e.get("valueFrom", {})}
    argv = [re.sub(r"\$\((\w+)\)", lambda m: refs.get(m.group(1), m.group(0)), a) for a in wait["args"]]
    args = build_parser().parse_args([*wait["command"][1:], *argv])
    assert args.wait is True and args.timeout == 600
    assert (args.embedding_model, args.dims) == (migrate_args(docs).embedding_model, migrate_args(docs).dims)
    assert args.dsn is None or "$(" not in args.dsn  # the URL comes from the environment, not argv
    migrate = one(docs, "Job", "-migrate-*")["spec"]["template"]["spec"]
    # Then the internal ragdb's roles (Open WebUI's, the exporter's), as the superuser, before any grant.
    assert [c["name"] for c in migrate["initContainers"]] == ["wait-for-postgres", "db-roles"]


def test_patch_file_list_is_data_driven() -> None:
    files = ["open_webui/retrieval/utils.py", "open_webui/retrieval/vector/utils.py"]
    deployment = one(render({"openwebui": {"patch": {"files": files}}}), "Deployment", "-openwebui")
    spec = deployment["spec"]["template"]["spec"]
    patched = [m for m in spec["containers"][0]["volumeMounts"] if m["name"] == "owui-patched"]
    mounts = {m["subPath"]: m["mountPath"] for m in patched}
    assert mounts == {
        **{f: f"/app/backend/{f}" for f in files},
        "open_webui/static/ragfr-patch.json": "/app/backend/open_webui/static/ragfr-patch.json",
    }
    patch = next(c for c in spec["initContainers"] if c["name"] == "apply-french-patch")
    assert env_of(patch)["PATCH_FILES"] == " ".join(files)


def test_patch_disabled_mounts_nothing_and_warns() -> None:
    from tests.support.chart import render_raw

    raw = render_raw({"openwebui": {"patch": {"enabled": False}}})
    assert "WARNING: openwebui.patch.enabled=false" in raw["ragfr/templates/NOTES.txt"]
    docs = render({"openwebui": {"patch": {"enabled": False}}})
    spec = one(docs, "Deployment", "-openwebui")["spec"]["template"]["spec"]
    assert "PYTHONPATH" not in owui_env(docs)
    assert not [m for m in spec["containers"][0]["volumeMounts"] if m["name"] == "owui-patched"]


def _labels_selected_by(policy: Doc) -> dict[str, str]:
    (rule,) = policy["spec"]["ingress"]
    (peer,) = rule["from"]
    return peer["podSelector"]["matchLabels"]


def _pods_with(docs: list[Doc], labels: dict[str, str]) -> set[str]:
    found = set()
    for obj, _ in pod_specs(docs):
        meta = obj["metadata"] if obj["kind"] == "Pod" else obj["spec"]["template"]["metadata"]
        if labels.items() <= meta.get("labels", {}).items():
            found.add(obj["metadata"]["name"])
    return found


def test_network_policies_admit_only_the_intended_clients() -> None:
    docs = render(example_values("replicas"))
    db = one(docs, "NetworkPolicy", "-ragdb")
    migrate, pull = one(docs, "Job", "-migrate-*")["metadata"]["name"], one(docs, "Job", "-pull-models-*")["metadata"]["name"]
    assert _pods_with(docs, _labels_selected_by(db)) == {"ragfr-openwebui", migrate, "ragfr-test"}
    assert db["spec"]["ingress"][0]["ports"] == [{"port": 5432, "protocol": "TCP"}]
    ollama = one(docs, "NetworkPolicy", "-ollama")
    # helm test's models check asks Ollama which models it holds (issue 36).
    assert _pods_with(docs, _labels_selected_by(ollama)) == {"ragfr-openwebui", pull, "ragfr-test"}
    redis = one(docs, "NetworkPolicy", "-redis")
    assert _pods_with(docs, _labels_selected_by(redis)) == {"ragfr-openwebui"}
    # Each policy's podSelector picks the workload it protects.
    for policy, workload in [(db, "StatefulSet"), (ollama, "Deployment"), (redis, "Deployment")]:
        component = policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
        assert any(
            d["kind"] == workload and d["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == component
            for d in docs
        )


def test_job_names_do_not_depend_on_the_release_revision() -> None:
    # Argo CD and `helm template` render every revision as 1 (tests/chart/test_gitops.py).
    names = {d["metadata"]["name"] for d in render(revision=7) if d["kind"] == "Job"}
    assert names == {d["metadata"]["name"] for d in render(revision=1) if d["kind"] == "Job"}
    assert {n.rsplit("-", 1)[0] for n in names} == {"ragfr-migrate", "ragfr-pull-models"}


def test_replicas_scenario_scales_out_safely() -> None:
    docs = render(example_values("replicas"))
    deployment = one(docs, "Deployment", "-openwebui")
    assert deployment["spec"]["replicas"] == 3 and "strategy" not in deployment["spec"]
    assert one(docs, "PodDisruptionBudget", "-openwebui")["spec"]["minAvailable"] == 2
    env = owui_env(docs)
    assert env["WEBSOCKET_MANAGER"] == "redis"
    assert env["WEBSOCKET_REDIS_URL"] == env["REDIS_URL"] == "redis://ragfr-redis:6379/0"
    assert one(docs, "PersistentVolumeClaim", "-openwebui-data")["spec"]["accessModes"] == ["ReadWriteMany"]
    assert not [d for d in render() if d["kind"] == "PodDisruptionBudget"]


def test_gpu_scenario_requests_the_device() -> None:
    docs = render(example_values("gpu"))
    spec = one(docs, "Deployment", "-ollama")["spec"]["template"]["spec"]
    assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert "nvidia.com/gpu" not in str(render())


def test_database_modes_point_every_client_at_the_same_database() -> None:
    # Secrets the passwords may come from: in cnpg mode Open WebUI's role has its own (the operator's
    # managed role, tests/chart/test_app_role.py); elsewhere one Secret holds every password.
    for example, host, secrets in [
        ("default", "ragfr-ragdb", {"ragfr-ragdb"}),
        ("external-db", "postgres.databases.svc.cluster.local", {"ragfr-db"}),
        ("cnpg", "ragfr-db-rw", {"ragfr-db-app", "ragfr-db-approle"}),
    ]:
        docs = render(example_values(example))
        urls = set()
        for obj, spec in pod_specs(docs):
            for _, c in containers(spec):
                env = env_of(c)
                for var, ref in env.items():
                    if isinstance(ref, dict) and "secretKeyRef" in ref and var.endswith("PASSWORD"):
                        assert ref["secretKeyRef"]["name"] in secrets, (example, obj["metadata"]["name"], var)
                for var in ("DATABASE_URL", "PGVECTOR_DB_URL"):
                    if var in env:
                        urls.add(env[var].split("@", 1)[1].split("/", 1)[0])
        assert urls == {f"{host}:5432"}, (example, urls)
        assert bool([d for d in docs if d["kind"] == "StatefulSet"]) == (example == "default")


def test_cnpg_cluster_runs_our_image_with_the_extensions() -> None:
    docs = render(example_values("cnpg"))
    cluster = one(docs, "Cluster", "-db")
    assert cluster["apiVersion"] == "postgresql.cnpg.io/v1"
    # The operator's my-values.yaml says the images were imported (tests/support/chart.py): never pulled.
    app_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    assert cluster["spec"]["imageName"] == f"localhost/ragfr/ragdb:{app_version}"
    assert cluster["spec"]["imagePullPolicy"] == "Never"
    assert cluster["spec"]["bootstrap"]["initdb"]["owner"] == "ragfr"
    assert set(cluster["spec"]["bootstrap"]["initdb"]["postInitApplicationSQL"]) == {
        "CREATE EXTENSION IF NOT EXISTS vector",
        "CREATE EXTENSION IF NOT EXISTS unaccent",
    }
    database = one(docs, "Database", "-db-openwebui")
    assert database["spec"] == {"name": "openwebui", "owner": "ragfr", "cluster": {"name": "ragfr-db"}}


def test_scripts_configmap_ships_every_script_it_mounts() -> None:
    cm = one(render(), "ConfigMap", "-scripts")
    for name, body in cm["data"].items():
        assert body.strip() and body == (CHART / "files" / name).read_text().rstrip("\n"), name


def dshm_limit(values: dict[str, Any]) -> str:
    sts = one(render(values), "StatefulSet", "ragdb")
    spec = sts["spec"]["template"]["spec"]
    [mount] = [m for m in spec["containers"][0]["volumeMounts"] if m["mountPath"] == "/dev/shm"]
    [volume] = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    assert volume["emptyDir"]["medium"] == "Memory"
    return str(volume["emptyDir"]["sizeLimit"])


def test_ragdb_dev_shm_holds_a_parallel_index_build() -> None:
    # maintenance_work_mem (PostgreSQL units; a bare number is kB) + 128Mi for parallel queries.
    assert dshm_limit({}) == "640Mi"
    assert dshm_limit({"ragdb": {"settings": {"maintenance_work_mem": "1GB"}}}) == "1152Mi"
    assert dshm_limit({"ragdb": {"settings": {"maintenance_work_mem": "2048kB"}}}) == "130Mi"
    assert dshm_limit({"ragdb": {"settings": {"maintenance_work_mem": "2049"}}}) == "131Mi"
    assert error_line({"ragdb": {"settings": {"maintenance_work_mem": "1.5GB"}}}) == (
        'ragdb.settings.maintenance_work_mem="1.5GB": give a PostgreSQL memory size such as 512MB or 1GB')


def test_open_webui_data_outlives_uninstall() -> None:
    pvc = one(render({}), "PersistentVolumeClaim", "openwebui-data")
    assert pvc["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_open_webui_tag_must_be_the_version_the_patch_was_made_for() -> None:
    manifest = json.loads((REPO / "patches" / "open-webui" / "manifest.json").read_text())
    version = manifest["open_webui_version"]
    chart_meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart_meta["annotations"]["ragfr.io/open-webui-version"] == version
    assert one(render({}), "Deployment", "openwebui")["spec"]["template"]["spec"]["containers"][0]["image"] \
        .endswith(f":v{version}")
    for tag in (f"v{version}", version, f"v{version}-cuda", f"v{version}@sha256:{'e' * 64}"):
        render({"openwebui": {"image": {"tag": tag}}})
    for tag in ("v0.12.5", f"v{version}0", "main"):
        assert error_line({"openwebui": {"image": {"tag": tag}}}) == (
            f"openwebui.image.tag={tag} is not Open WebUI {version}, the only version the French patch applies to "
            f"(patches/open-webui/manifest.json): use tag v{version} (or v{version}@sha256:<digest>) or set "
            "openwebui.patch.enabled=false")
    # Without the patch any stock version may run.
    render({"openwebui": {"image": {"tag": "v0.13.0"}, "patch": {"enabled": False}}})


def test_chart_mounts_every_file_the_patch_manifest_edits() -> None:
    """A file the manifest patches but the chart does not mount would run stock (e.g. the chat with no
    evidence gate); the readiness probe would catch it, this test catches it before a deploy."""
    manifest = json.loads((REPO / "patches" / "open-webui" / "manifest.json").read_text(encoding="utf-8"))
    values = yaml.safe_load((REPO / "charts" / "ragfr" / "values.yaml").read_text(encoding="utf-8"))
    assert sorted(values["openwebui"]["patch"]["files"]) == sorted(f["path"] for f in manifest["files"])


def test_no_cross_encoder_means_no_reranker_init_container() -> None:
    # The default names none, and openwebui.env's "" is a value, not unset (sprig's merge took "" for unset and
    # kept the settings file's model, so the pod then waited on a download of a model nobody asked for).
    for docs in (render(), render({"openwebui": {"env": {"RAG_RERANKING_MODEL": ""}}})):
        assert owui_env(docs)["RAG_RERANKING_MODEL"] == ""
        spec = one(docs, "Deployment", "-openwebui")["spec"]["template"]["spec"]
        assert [c["name"] for c in spec["initContainers"]] == ["wait-for-schema", "wait-for-grants", "db-passfile",
                                                                "copy-stock-openwebui", "apply-french-patch"]
    assert owui_env(render({"openwebui": {"env": {"RAG_TOP_K": ""}}}))["RAG_TOP_K"] == ""


@pytest.mark.parametrize(("reranker", "said"), [
    ({"source": "image", "image": {"repository": "r/c", "tag": "1"}}, "openwebui.reranker.source=image "),
    ({"source": "pvc", "existingClaim": "hf"}, "openwebui.reranker.source=pvc "),
    ({"cache": {"enabled": True}}, "openwebui.reranker.source=download with openwebui.reranker.cache.enabled "),
])
def test_a_reranker_source_without_a_model_is_refused(reranker: dict[str, Any], said: str) -> None:
    """Setting how a cross-encoder reaches the pod, with none named, would silently run none."""
    from tests.support.chart import error_line

    assert error_line({"openwebui": {"reranker": reranker}}) == (
        said + "configures a cross-encoder, but none is named: the chart runs none by default "
        '(docs/retrieval-quality.md, "Cross-encoder"); set openwebui.env.RAG_RERANKING_MODEL to the model to run, '
        "or remove these settings")


def test_the_reranker_download_is_pinned_to_a_commit() -> None:
    """Issue 25 item 5 (Low): the init container gets the commit to download (files/reranker-cache.py refuses
    anything else, tests/chart/test_scripts.py); no revision is needed when no cross-encoder is configured."""
    # The default commit is the one of the multilingual cross-encoder docs/install.md names (issue 38 item 7).
    named = {"openwebui": {"env": {"RAG_RERANKING_MODEL": "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1"}}}
    init = {c["name"]: c for c in one(render(named), "Deployment", "-openwebui")["spec"]["template"]["spec"]["initContainers"]}
    env = env_of(init["cache-reranker"])
    assert env["RERANKER_SOURCE"] == "download"
    assert env["RERANKER_REVISION"] == "1427fd652930e4ba29e8149678df786c240d8825"
    assert yaml.safe_load((CHART / "values.yaml").read_text())["openwebui"]["reranker"]["revision"] == env["RERANKER_REVISION"]
    render({"openwebui": {"env": {"RAG_RERANKING_MODEL": ""}, "reranker": {"revision": ""}}})
    render({"openwebui": {**named["openwebui"], "reranker": {"source": "pvc", "existingClaim": "hf", "revision": ""}}})
