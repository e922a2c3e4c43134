"""ragfr_tools.kubesim.pods: rendered pod specs -> podman arguments, checked on the chart's real render.

No podman here (tests/tools/test_cluster_smoke.py runs the result); these pin the translation itself.
"""

from __future__ import annotations

import base64
import json
import re

import pytest
from tests.support.chart import render
from tests.support.paths import REPO

from ragfr_tools.kubesim import pods as kp
from ragfr_tools.kubesim import smoke


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], kp.Manifest]:
    return kp.index(render({}))


def migrate_job(objects: dict[tuple[str, str], kp.Manifest]) -> kp.Manifest:
    """The migrations Job: its name ends with a hash of its spec (charts/ragfr/templates/_jobs.tpl)."""
    (name,) = [n for k, n in objects if k == "Job" and re.fullmatch(r"ragfr-migrate-[0-9a-f]{10}", n)]
    return objects[("Job", name)]


def secret(objects: dict[tuple[str, str], kp.Manifest], name: str, key: str) -> str:
    return base64.b64decode(objects[("Secret", name)]["data"][key]).decode()


def test_expand_follows_kubernetes() -> None:
    env = {"A": "x", "B": "y"}
    assert kp.expand("$(A)-$(B)", env) == "x-y"
    assert kp.expand("$$(A)", env) == "$(A)"  # escaped
    assert kp.expand("$(MISSING)", env) == "$(MISSING)"  # unknown stays literal


def test_job_pod_resolves_secrets_and_expands_args(objects: dict[tuple[str, str], kp.Manifest]) -> None:
    pod = kp.pod_of(migrate_job(objects), objects)
    password = secret(objects, "ragfr-ragdb", "ragfr-password")
    wait, roles = pod.init_containers
    assert wait.name == "wait-for-postgres" and dict(wait.env)["PGPASSWORD"] == password
    # The internal ragdb's roles are made by the superuser, whose password comes from the same Secret.
    assert roles.name == "db-roles"
    assert dict(roles.env)["PGPASSWORD"] == secret(objects, "ragfr-ragdb", "postgres-password")
    [migrate] = pod.containers
    assert migrate.command == ("ragfr", "migrate")
    rendered = migrate_job(objects)["spec"]["template"]["spec"]["containers"][0]["args"]
    assert migrate.args == tuple(rendered) and migrate.args[:3] == ("--dims", "1024", "--embedding-model")
    # The password from the Secret, the URL without it (docs/install.md "Database passwords").
    assert dict(migrate.env)["PGPASSWORD"] == password
    assert dict(migrate.env)["DATABASE_URL"] == "postgresql://ragfr@ragfr-ragdb:5432/ragfr?sslmode=disable"
    # $(VAR) in args, expanded from the ConfigMap entries defined in env.
    owui = kp.pod_of(objects[("Deployment", "ragfr-openwebui")], objects)
    (schema,) = [c for c in owui.init_containers if c.name == "wait-for-schema"]
    assert schema.args is not None and "ollama:bge-m3:567m" in schema.args and "$(" not in " ".join(schema.args)
    assert (migrate.user, migrate.group, migrate.supplementary_groups) == (65532, 65532, (65532,))
    assert migrate.read_only_root and migrate.cap_drop == ("ALL",) and migrate.no_new_privileges


def test_run_args_carry_the_security_context_and_mounts(objects: dict[tuple[str, str], kp.Manifest]) -> None:
    pod = kp.pod_of(migrate_job(objects), objects)
    c = pod.init_containers[0]
    argv = kp.run_args(c, pod_name="p", container_name="p-c", image="img", volume_paths={
        "tmp": "/h/tmp", "ragfr-scripts": "/h/scripts"}, claim_volumes={}, volumes=pod.volumes, detach=False)
    joined = " ".join(argv)
    for part in ("--user 65532:65532", "--group-add 65532", "--read-only --read-only-tmpfs=false",
                 "--cap-drop ALL", "--security-opt no-new-privileges", "--pull never", "--image-volume ignore",
                 "type=bind,source=/h/scripts,destination=/ragfr-scripts,ro",
                 "type=bind,source=/h/tmp,destination=/tmp"):
        assert part in joined, part
    assert argv[argv.index("--entrypoint") + 1] == json.dumps(["/bin/sh", "/ragfr-scripts/wait-for-postgres.sh"])
    assert argv[-1] == "img"  # no args: the command alone, the image's CMD dropped as Kubernetes does
    assert "-d" not in argv


def test_statefulset_claim_shm_and_service(objects: dict[tuple[str, str], kp.Manifest]) -> None:
    pod = kp.pod_of(objects[("StatefulSet", "ragfr-ragdb")], objects)
    assert pod.name == "ragfr-ragdb-0"
    assert pod.volumes["data"] == kp.Volume("data", "persistentVolumeClaim", "data-ragfr-ragdb-0")
    [postgres] = pod.containers
    assert postgres.command is None and postgres.args and postgres.args[:2] == ("-c", "effective_cache_size=768MB")
    argv = kp.run_args(postgres, pod_name="p", container_name="p-c", image="img",
                       volume_paths={n: f"/h/{n}" for n, v in pod.volumes.items() if not v.memory},
                       claim_volumes={"data-ragfr-ragdb-0": "pvc"}, volumes=pod.volumes, detach=True)
    assert "pvc:/var/lib/postgresql/data:nocopy" in argv
    assert f"type=tmpfs,destination=/dev/shm,tmpfs-mode=1777,tmpfs-size={640 * 1024**2}" in argv
    assert "type=bind,source=/h/ragfr-scripts/ragdb-init.sh,destination=/docker-entrypoint-initdb.d/10-ragfr-init.sh" \
        in argv
    assert "--entrypoint" not in argv and argv[argv.index("img") + 1:] == list(postgres.args)
    assert "-d" in argv
    assert kp.service_targets(objects, pod) == ["ragfr-ragdb", "ragfr-ragdb-headless"]


def test_env_from_configmap_then_env(objects: dict[tuple[str, str], kp.Manifest]) -> None:
    pod = kp.pod_of(objects[("Deployment", "ragfr-openwebui")], objects)
    env = dict(pod.containers[0].env)
    assert env["VECTOR_DB"] == "pgvector" and env["PYTHONPATH"] == "/opt/ragfr/site"
    assert env["WEBUI_SECRET_KEY"] == secret(objects, "ragfr-openwebui", "webui-secret-key")
    assert [c.name for c in pod.init_containers][:5] == [
        "wait-for-schema", "wait-for-grants", "db-passfile", "copy-stock-openwebui", "apply-french-patch"]


def test_unsupported_objects_fail_with_their_name(objects: dict[tuple[str, str], kp.Manifest]) -> None:
    job = json.loads(json.dumps(migrate_job(objects)))
    job["spec"]["template"]["spec"]["volumes"].append({"name": "x", "hostPath": {"path": "/"}})
    with pytest.raises(kp.TranslationError, match=r"Job/ragfr-migrate-[0-9a-f]{10}: unsupported volume x"):
        kp.pod_of(job, objects)
    job = json.loads(json.dumps(migrate_job(objects)))
    job["spec"]["template"]["spec"]["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]["key"] = "nope"
    with pytest.raises(kp.TranslationError, match="Secret 'ragfr-ragdb' has no key 'nope'"):
        kp.pod_of(job, objects)


def test_every_deviation_stand_in_and_gap_is_documented() -> None:
    doc = " ".join((REPO / "docs" / "reference" / "testing.md").read_text().split())
    for item in (*kp.DEVIATIONS, *smoke.NOT_RUN, smoke.NO_RERANKER, *smoke.STAND_INS.values()):
        assert " ".join(item.split()) in doc, f"docs/reference/testing.md (install.md's reference) does not list: {item}"


def test_the_smoke_expects_the_gate_scale_the_example_renders() -> None:
    """With a reranker the gate decides on the cross-encoder's scale and its init containers run (so they are
    no longer listed as not run); the default renders neither."""
    default = smoke.render("default", smoke.SMOKE_VALUES)
    image = smoke.render("reranker-image", smoke.SMOKE_VALUES)
    owui = {name: kp.pod_of(next(d for d in docs if d["kind"] == "Deployment"
                                 and d["metadata"]["name"].endswith("openwebui")), kp.index(docs))
            for name, docs in (("default", default), ("image", image))}
    assert smoke.gate_scale(owui["default"]) == "rrf" and smoke.NO_RERANKER in smoke.not_run(default)
    assert smoke.gate_scale(owui["image"]) == "cross-encoder" and smoke.NO_RERANKER not in smoke.not_run(image)
    assert "copy-reranker-cache" in [c.name for c in owui["image"].init_containers]


def test_each_smoke_run_names_its_objects_apart() -> None:
    # Stop 18's CI failed because `make cluster-smoke` used one fixed prefix and a killed run had left a volume
    # under it; every run now has a prefix of its own.
    prefixes = {smoke.run_prefix() for _ in range(20)}
    assert len(prefixes) == 20
    assert all(re.fullmatch(r"ragfr-smoke-[0-9a-f]{6}", p) for p in prefixes)


def test_a_memory_volume_of_several_containers_is_shared(objects: dict[tuple[str, str], kp.Manifest]) -> None:
    # Open WebUI's password file: written by init container db-passfile, read by open-webui.
    pod = kp.pod_of(objects[("Deployment", "ragfr-openwebui")], objects)
    assert pod.volumes["db-credentials"].memory
    (writer,) = [c for c in pod.init_containers if c.name == "db-passfile"]
    for c in (writer, pod.containers[0]):
        argv = kp.run_args(c, pod_name="p", container_name="p-c", image="img",
                           volume_paths={n: f"/h/{n}" for n in pod.volumes}, claim_volumes={"ragfr-openwebui-data": "v"},
                           volumes=pod.volumes, detach=False)
        assert any(a.startswith("type=bind,source=/h/db-credentials,destination=/run/ragfr-db") for a in argv), argv
