"""Open WebUI reaches ragfr's database as its least-privilege role (database.ragfr.appUser) in every database
mode, with the role's own password; the owner stays with the migrations and the backups. What the role may
do is tested on the real database (tests/db/test_app_role.py) and through the real Open WebUI
(tests/owui/test_db_passwords.py)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from tests.support.chart import env_of, error_line, example_values, one, render

MODES: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    # mode: (values, the secretKeyRef Open WebUI's role password comes from)
    "internal": ({}, {"name": "ragfr-ragdb", "key": "ragfr-app-password"}),
    "external": (example_values("external-db"), {"name": "ragfr-db-credentials", "key": "ragfr-app-password"}),
    "cnpg": (example_values("cnpg"), {"name": "ragfr-db-approle", "key": "password"}),
}


def _init(docs: list[dict[str, Any]], kind: str, suffix: str, name: str) -> dict[str, Any]:
    spec = one(docs, kind, suffix)["spec"]
    spec = spec["jobTemplate"]["spec"]["template"]["spec"] if kind == "CronJob" else spec["template"]["spec"]
    (found,) = [c for c in spec.get("initContainers", []) + spec["containers"] if c["name"] == name]
    return found


@pytest.mark.parametrize("mode", list(MODES))
def test_open_webui_uses_its_own_role_and_password_in_every_mode(mode: str) -> None:
    values, secret = MODES[mode]
    docs = render(values)
    ext = values.get("database", {}).get("external", {}).get("existingSecret")
    if ext:
        secret = {**secret, "name": ext}
    owui = env_of(_init(docs, "Deployment", "-openwebui", "open-webui"))
    assert owui["PGVECTOR_DB_URL"].startswith("postgresql://ragfr_app@")
    assert owui["DATABASE_URL"].startswith("postgresql://openwebui@") or mode == "cnpg"
    passfile = env_of(_init(docs, "Deployment", "-openwebui", "db-passfile"))
    assert passfile["PGVECTOR_DB_URL"] == owui["PGVECTOR_DB_URL"]  # the password file line matches the URL
    assert passfile["RAGFR_DB_PASSWORD"] == {"secretKeyRef": secret}
    grants = _init(docs, "Deployment", "-openwebui", "wait-for-grants")
    assert grants["command"] == ["ragfr", "migrate"] and grants["args"][0] == "--wait"
    assert env_of(grants)["DATABASE_URL"].startswith("postgresql://ragfr_app@")  # waits for the role's grants
    assert env_of(grants)["PGPASSWORD"] == {"secretKeyRef": secret}
    # `ragfr embeddings k8s` borrows wait-for-schema's env for its Job, which alters the schema: the owner's.
    assert env_of(_init(docs, "Deployment", "-openwebui", "wait-for-schema"))["DATABASE_URL"].startswith(
        "postgresql://ragfr@")
    # The owner migrates (and grants the role), and dumps.
    migrate = _init(docs, "Job", "-migrate-*", "migrate")
    assert env_of(migrate)["DATABASE_URL"].startswith("postgresql://ragfr@")
    assert migrate["args"][-2:] == ["--app-role", "ragfr_app"]
    if mode == "internal":
        backup = env_of(_init(render({"backup": {"enabled": True}}), "CronJob", "-backup", "backup"))
        assert backup["RAGFR_DATABASE_URL"].startswith("postgresql://ragfr@")


def test_without_the_patch_open_webui_connects_as_the_owner() -> None:
    # Stock Open WebUI runs CREATE INDEX IF NOT EXISTS on document_chunk at every start, refused to a
    # non-owner even when the index exists: only the patch skips it (ragfr.owui.runtime.schema).
    docs = render({"openwebui": {"patch": {"enabled": False}}})
    owui = env_of(_init(docs, "Deployment", "-openwebui", "open-webui"))
    assert owui["PGVECTOR_DB_URL"].startswith("postgresql://ragfr@")
    passfile = env_of(_init(docs, "Deployment", "-openwebui", "db-passfile"))
    assert passfile["PGVECTOR_DB_URL"] == owui["PGVECTOR_DB_URL"]
    assert passfile["RAGFR_DB_PASSWORD"] == {"secretKeyRef": {"name": "ragfr-ragdb", "key": "ragfr-password"}}
    init_names = [c["name"] for c in one(docs, "Deployment", "-openwebui")["spec"]["template"]["spec"]["initContainers"]]
    assert "wait-for-grants" not in init_names and "wait-for-schema" in init_names


@pytest.mark.parametrize(("values", "message"), [
    ({"database": {"ragfr": {"appUser": "postgres"}}}, "database.ragfr.appUser=postgres is also the superuser"),
    ({"database": {"ragfr": {"appUser": "ragfr"}}}, "database.ragfr.appUser=ragfr is also database.ragfr.user"),
    ({"database": {"ragfr": {"appUser": "openwebui"}}}, "database.ragfr.appUser=openwebui is also database.openwebui"),
    ({"ragdb": {"metrics": {"user": "postgres"}}}, "ragdb.metrics.user=postgres is also the superuser"),
    ({"ragdb": {"metrics": {"user": "ragfr_app"}}}, "database.ragfr.appUser and ragdb.metrics.user are both ragfr_app"),
])
def test_roles_the_chart_alters_must_be_roles_of_their_own(values: dict[str, Any], message: str) -> None:
    # ragdb-roles.sh runs ALTER ROLE ... NOSUPERUSER PASSWORD on them: on postgres or the owner that breaks the
    # database; on Open WebUI's role it rewrites the password its own database is reached with.
    assert error_line(values).startswith(message)


def test_internal_ragdb_makes_the_roles_with_passwords_from_its_secret() -> None:
    docs = render()
    secret = one(docs, "Secret", "-ragdb")
    assert set(secret["data"]) == {"postgres-password", "ragfr-password", "openwebui-password", "ragfr-app-password",
                                   "monitor-password"}
    roles = _init(docs, "Job", "-migrate-*", "db-roles")
    env = env_of(roles)
    assert roles["command"] == ["/bin/sh", "/ragfr-scripts/ragdb-roles.sh"]
    assert env["PGUSER"] == "postgres" and env["APP_USER"] == "ragfr_app" and env["MONITOR_USER"] == "ragfr_monitor"
    assert env["APP_PASSWORD"] == {"secretKeyRef": {"name": "ragfr-ragdb", "key": "ragfr-app-password"}}
    assert "ragdb-roles.sh" in one(docs, "ConfigMap", "-scripts")["data"]
    spec = one(docs, "Job", "-migrate-*")["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["wait-for-postgres", "db-roles"]  # before the grants
    renamed = render({"database": {"ragfr": {"appUser": "owui_rag"}}, "ragdb": {"auth": {"existingSecret": "mine"}}})
    assert env_of(_init(renamed, "Job", "-migrate-*", "db-roles"))["APP_PASSWORD"] == {
        "secretKeyRef": {"name": "mine", "key": "ragfr-app-password"}}
    assert env_of(_init(renamed, "Deployment", "-openwebui", "open-webui"))["PGVECTOR_DB_URL"].startswith(
        "postgresql://owui_rag@")


@pytest.mark.parametrize("mode", ["external", "cnpg"])
def test_no_superuser_container_outside_internal_mode(mode: str) -> None:
    spec = one(render(MODES[mode][0]), "Job", "-migrate-*")["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["wait-for-postgres"]


def test_cnpg_manages_the_role_with_its_own_basic_auth_secret() -> None:
    docs = render(example_values("cnpg"))
    cluster = one(docs, "Cluster", "-db")
    (role,) = cluster["spec"]["managed"]["roles"]
    assert role["name"] == "ragfr_app" and role["login"] is True and role["ensure"] == "present"
    assert not any(role[k] for k in ("superuser", "createdb", "createrole", "replication", "bypassrls"))
    assert role["passwordSecret"] == {"name": "ragfr-db-approle"}
    secret = one(docs, "Secret", "-db-approle")
    assert secret["type"] == "kubernetes.io/basic-auth"
    assert base64.b64decode(secret["data"]["username"]).decode() == "ragfr_app"  # the operator requires it
    assert len(base64.b64decode(secret["data"]["password"])) == 32
    # Not the operator's own <cluster>-app Secret (the owner's password), which the chart never renders.
    assert not [d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] == "ragfr-db-app"]
    given = render({**example_values("cnpg"), "database": {**example_values("cnpg")["database"],
                                                           "cnpg": {"appRoleSecret": "gitops-approle"}}})
    assert not [d for d in given if d["kind"] == "Secret" and d["metadata"]["name"].endswith("-db-approle")]
    assert one(given, "Cluster", "-db")["spec"]["managed"]["roles"][0]["passwordSecret"] == {"name": "gitops-approle"}
    passfile = env_of(_init(given, "Deployment", "-openwebui", "db-passfile"))
    assert passfile["RAGFR_DB_PASSWORD"] == {"secretKeyRef": {"name": "gitops-approle", "key": "password"}}
