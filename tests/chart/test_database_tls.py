"""database.tls (issue 25): every client of the database connects with sslmode=verify-full against a CA it
mounts, ragdb serves the certificate and requires TLS from other pods; refused combinations say what to set.
The real connections (ragdb's TLS, refused plain TCP, a wrong CA, a wrong name) are run by
tests/tools/test_cluster_smoke.py in the chart's pods."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.chart import containers, env_of, error_line, example_values, one, pod_specs, render

from ragfr.embmigrate.k8s import manifests

CA = "/etc/ragfr/db-ca/ca.crt"
MODES: dict[str, dict[str, Any]] = {
    "internal": {"database": {"tls": {"enabled": True, "existingSecret": "ragdb-tls"}}},
    "external": {"database": {"mode": "external", "tls": {"enabled": True, "existingSecret": "db-ca"},
                              "external": {"host": "pg.example", "existingSecret": "db-pw", "sslmode": "require"}}},
    "cnpg": {"database": {"mode": "cnpg", "tls": {"enabled": True}, "openwebui": {"user": "ragfr"}}},
}
CA_SECRET = {"internal": "ragdb-tls", "external": "db-ca", "cnpg": "ragfr-db-ca"}


def database_clients(docs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(object, pod spec, container) for every container given a database URL or libpq host, but the
    password-file writer, which only parses the URLs."""
    out = []
    for obj, spec in pod_specs(docs):
        for _, c in containers(spec):
            env = env_of(c)
            urls = [v for v in env.values() if isinstance(v, str) and v.startswith("postgresql://")]
            if (urls or "PGHOST" in env) and c["name"] != "db-passfile":
                out.append((obj, spec, c))
    return out


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_database_client_verifies_the_server_against_the_mounted_ca(mode: str) -> None:
    values = {**MODES[mode], "backup": {"enabled": True}}
    docs = render(values)
    clients = database_clients(docs)
    names = {f"{o['metadata']['name']}/{c['name']}" for o, _, c in clients}
    migrate = one(docs, "Job", "-migrate-*")["metadata"]["name"]
    assert {f"{migrate}/migrate", "ragfr-openwebui/open-webui", "ragfr-openwebui/wait-for-schema",
            "ragfr-test/test"} <= names, names
    for obj, spec, c in clients:
        where = f"{obj['metadata']['name']}/{c['name']}"
        env = env_of(c)
        for key, value in env.items():
            if isinstance(value, str) and value.startswith("postgresql://"):
                assert f"?sslmode=verify-full&sslrootcert={CA}" in value, (where, key, value)
        if "PGHOST" in env:
            assert (env["PGSSLMODE"], env["PGSSLROOTCERT"]) == ("verify-full", CA), where
        [mount] = [m for m in c["volumeMounts"] if m["name"] == "db-ca"]
        assert mount == {"name": "db-ca", "mountPath": "/etc/ragfr/db-ca", "readOnly": True}, where
        [volume] = [v for v in spec["volumes"] if v["name"] == "db-ca"]
        # Only the CA: never ragdb's private key, nor a CNPG CA's signing key, in a client pod.
        assert volume["secret"] == {"secretName": CA_SECRET[mode], "items": [{"key": "ca.crt", "path": "ca.crt"}]}


def test_ragdb_serves_the_secret_certificate_and_requires_tls_from_other_pods() -> None:
    docs = render({**MODES["internal"], "ragdb": {"metrics": {"enabled": True}}})
    sts = one(docs, "StatefulSet", "-ragdb")
    spec = sts["spec"]["template"]["spec"]
    [pg] = [c for c in spec["containers"] if c["name"] == "postgres"]
    settings = dict(zip(pg["args"][::2], pg["args"][1::2], strict=True))
    assert set(settings) == {"-c"}
    args = pg["args"][1::2]
    for arg in ("ssl=on", "ssl_cert_file=/etc/ragdb-tls/tls.crt", "ssl_key_file=/etc/ragdb-tls/tls.key",
                "hba_file=/etc/ragdb-hba/pg_hba.conf"):
        assert arg in args, args
    [tls] = [v for v in spec["volumes"] if v["name"] == "tls"]
    assert tls["secret"]["secretName"] == "ragdb-tls"
    assert tls["secret"]["defaultMode"] == 0o440  # root-owned, fsGroup-readable: what PostgreSQL accepts
    assert spec["securityContext"]["fsGroup"] == 999 == spec["securityContext"]["runAsUser"]
    hba = one(docs, "ConfigMap", "-scripts")["data"]["ragdb-hba-tls.conf"]
    rules = [line.split() for line in hba.splitlines() if line and not line.startswith("#")]
    assert rules[-1] == ["hostssl", "all", "all", "all", "scram-sha-256"]
    assert all(r[0] == "local" or r[3] in ("127.0.0.1/32", "::1/128") for r in rules[:-1]), rules
    # The exporter beside it stays on loopback, which the file leaves plain.
    [exporter] = [c for c in spec["containers"] if c["name"] == "metrics"]
    assert env_of(exporter)["DATA_SOURCE_URI"].startswith("127.0.0.1:5432/")


def test_cert_manager_issues_the_certificate_for_the_names_clients_use() -> None:
    docs = render(example_values("database-tls"))
    cert = one(docs, "Certificate", "-ragdb")
    assert cert["apiVersion"] == "cert-manager.io/v1"
    assert cert["spec"]["secretName"] == "ragfr-ragdb-tls"
    assert cert["spec"]["dnsNames"][0] == "ragfr-ragdb"  # the host of every rendered URL
    assert "ragfr-ragdb.ragfr.svc" in cert["spec"]["dnsNames"]
    assert cert["spec"]["issuerRef"] == {"name": "ragfr-db-ca", "kind": "Issuer", "group": "cert-manager.io"}
    [tls] = [v for v in one(docs, "StatefulSet", "-ragdb")["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls"]
    assert tls["secret"]["secretName"] == "ragfr-ragdb-tls"


def test_without_tls_nothing_changes() -> None:
    docs = render({})
    assert not [d for d in docs if d["kind"] == "Certificate"]
    for obj, _spec, c in database_clients(docs):
        assert not [m for m in c.get("volumeMounts", []) if m["name"] == "db-ca"], obj["metadata"]["name"]
        for value in env_of(c).values():
            if isinstance(value, str) and value.startswith("postgresql://"):
                assert "sslmode=disable" in value and "sslrootcert" not in value
    pg = one(docs, "StatefulSet", "-ragdb")["spec"]["template"]["spec"]["containers"][0]
    assert not [a for a in pg["args"] if a.startswith(("ssl", "hba_file"))]


@pytest.mark.parametrize(("values", "message"), [
    ({"tls": {"enabled": True}},
     "database.tls.enabled=true needs database.tls.existingSecret (a kubernetes.io/tls Secret with tls.crt, "
     "tls.key and ca.crt for the Service <release>-ragdb) or database.tls.certManager.enabled=true"),
    ({"tls": {"certManager": {"enabled": True, "issuerRef": {"name": "ca"}}}},
     "database.tls.certManager.enabled=true needs database.tls.enabled=true"),
    ({"tls": {"enabled": True, "existingSecret": "s", "certManager": {"enabled": True, "issuerRef": {"name": "ca"}}}},
     "database.tls: existingSecret and certManager.enabled are exclusive"),
    ({"tls": {"enabled": True, "certManager": {"enabled": True}}},
     "database.tls.certManager.enabled=true needs database.tls.certManager.issuerRef.name"),
    ({"mode": "cnpg", "openwebui": {"user": "ragfr"}, "tls": {"enabled": True, "certManager": {"enabled": True, "issuerRef": {"name": "ca"}}}},
     "database.tls.certManager is for the chart's ragdb (database.mode=internal), not mode=cnpg"),
    ({"mode": "external", "external": {"host": "h", "existingSecret": "p"}, "tls": {"enabled": True}},
     "database.tls.enabled=true with database.mode=external needs database.tls.existingSecret"),
])
def test_incomplete_tls_values_are_refused_with_what_to_set(values: dict[str, Any], message: str) -> None:
    assert error_line({"database": values}).startswith(message)


def test_ssl_settings_of_ragdb_are_refused_under_tls() -> None:
    values = {**MODES["internal"], "ragdb": {"settings": {"ssl": "off"}}}
    assert error_line(values).startswith("ragdb.settings.ssl is set by database.tls")


def test_embedding_migration_job_mounts_the_ca_its_borrowed_url_names() -> None:
    # `ragfr embeddings k8s` copies wait-for-schema's env (DATABASE_URL names the CA's file): the CA goes too.
    docs = render(MODES["internal"])
    deployment, configmap = one(docs, "Deployment", "-openwebui"), one(docs, "ConfigMap", "-openwebui-env")
    req = manifests.JobRequest(namespace="ragfr", release="ragfr", to="ollama:bge-m3:567m")
    job = manifests.job(req, "ragfr-embmigrate-x", deployment, configmap)
    pod = job["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert f"sslrootcert={CA}" in env_of(container)["DATABASE_URL"]
    assert {"name": "db-ca", "mountPath": "/etc/ragfr/db-ca", "readOnly": True} in container["volumeMounts"]
    [volume] = [v for v in pod["volumes"] if v["name"] == "db-ca"]
    assert volume["secret"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}]
    # Without TLS the Job has its scratch volume only.
    plain = manifests.job(req, "x", one(render({}), "Deployment", "-openwebui"), configmap)
    assert [v["name"] for v in plain["spec"]["template"]["spec"]["volumes"]] == ["tmp"]
