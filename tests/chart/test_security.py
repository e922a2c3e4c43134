"""Secure by default: sign-up closed, authentication never off, an optional first admin from a Secret,
NOTES that print the scheme that is true."""

from __future__ import annotations

import pytest
import yaml
from tests.support.chart import CHART, EXAMPLES, env_of, error_line, example_values, one, render, render_raw

from ragfr_tools.kubesim import pods as kp

ENV_FILE = CHART / "files" / "openwebui-env.yaml"


def _owui(values: dict | None = None) -> dict:  # type: ignore[type-arg]
    docs = render(values)
    main = one(docs, "Deployment", "-openwebui")["spec"]["template"]["spec"]["containers"][0]
    cm = one(docs, "ConfigMap", "-openwebui-env")
    return {**cm["data"], **env_of(main)}


@pytest.mark.parametrize("example", EXAMPLES)
def test_sign_up_is_closed_in_every_scenario(example: str) -> None:
    env = _owui(example_values(example))
    assert env["ENABLE_SIGNUP"] == "false"
    assert env.get("WEBUI_AUTH", "true") == "true"


def test_sign_up_is_closed_for_make_up_too() -> None:
    assert yaml.safe_load(ENV_FILE.read_text())["ENABLE_SIGNUP"] == "false"


@pytest.mark.parametrize("value", ["false", "False", "0", "no"])
def test_webui_auth_off_is_refused_from_env_and_extra_env(value: str) -> None:
    for values in ({"openwebui": {"env": {"WEBUI_AUTH": value}}},
                   {"openwebui": {"extraEnv": [{"name": "WEBUI_AUTH", "value": value}]}}):
        assert error_line(values).startswith(f"openwebui WEBUI_AUTH={value} is refused")


def test_first_admin_comes_from_a_secret_only_when_given() -> None:
    assert "WEBUI_ADMIN_EMAIL" not in _owui()
    env = _owui({"openwebui": {"admin": {"existingSecret": "owui-admin", "name": "Admin RAG"}}})
    assert env["WEBUI_ADMIN_EMAIL"] == {"secretKeyRef": {"name": "owui-admin", "key": "admin-email"}}
    assert env["WEBUI_ADMIN_PASSWORD"] == {"secretKeyRef": {"name": "owui-admin", "key": "admin-password"}}
    assert env["WEBUI_ADMIN_NAME"] == "Admin RAG"
    assert error_line({"openwebui": {"extraEnv": [{"name": "WEBUI_ADMIN_PASSWORD", "value": "x"}]}}).startswith(
        "openwebui.extraEnv: WEBUI_ADMIN_PASSWORD is computed by the chart")


ADMIN = {"admin": {"existingSecret": "owui-admin"}}
INGRESS = {"enabled": True, "host": "rag.example.fr"}


def test_an_ingress_without_an_admin_secret_is_refused() -> None:
    """Behind an ingress, whoever signs up first while no user exists becomes admin: no render without the
    admin Secret, unless the operator says allowFirstSignup (then NOTES shout it)."""
    assert error_line({"openwebui": {"ingress": INGRESS}}).startswith(
        "openwebui.ingress.enabled=true without openwebui.admin.existingSecret: the first visitor")
    assert "set openwebui.admin.existingSecret" in error_line({"openwebui": {"ingress": INGRESS}})
    with_secret = _notes({"openwebui": {"ingress": INGRESS, **ADMIN}})
    assert "Secret owui-admin" in with_secret and "FIRST SIGN-UP BECOMES ADMIN" not in with_secret
    env = _owui({"openwebui": {"ingress": INGRESS, **ADMIN}})
    assert env["WEBUI_ADMIN_EMAIL"] == {"secretKeyRef": {"name": "owui-admin", "key": "admin-email"}}
    allowed = _notes({"openwebui": {"ingress": INGRESS, "admin": {"allowFirstSignup": True}}})
    assert "WARNING: THE FIRST SIGN-UP BECOMES ADMIN (openwebui.admin.allowFirstSignup=true" in allowed
    assert "Anyone who reaches rag.example.fr and signs up before you OWNS this Open WebUI" in allowed
    assert "WEBUI_ADMIN_EMAIL" not in _owui({"openwebui": {"ingress": INGRESS, "admin": {"allowFirstSignup": True}}})
    # Without an ingress (port-forward only) nothing changes: the quiet reminder, no refusal.
    assert "FIRST SIGN-UP BECOMES ADMIN" not in _notes({})


def test_webui_auth_is_set_in_the_container_env_so_no_env_from_source_can_override_it() -> None:
    """extraEnvFrom Secrets/ConfigMaps are invisible to the chart; Kubernetes lets `env` win over `envFrom` for
    the same name, so WEBUI_AUTH=true in env is what the container gets whatever they hold."""
    docs = render({"openwebui": {"extraEnvFrom": [{"configMapRef": {"name": "sneaky"}},
                                                  {"secretRef": {"name": "sneakier"}}]}})
    main = one(docs, "Deployment", "-openwebui")["spec"]["template"]["spec"]["containers"][0]
    assert {"configMapRef": {"name": "sneaky"}} in main["envFrom"]
    auth = [e for e in main["env"] if e["name"] == "WEBUI_AUTH"]
    assert auth == [{"name": "WEBUI_AUTH", "value": "true"}]
    # What the kubelet makes of it (envFrom sources first, then env): extraEnvFrom sources saying otherwise lose.
    hostile = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "sneaky"},
                "data": {"WEBUI_AUTH": "False"}},
               {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sneakier"},
                "stringData": {"WEBUI_AUTH": "false"}}]
    pod = kp.pod_of(one(docs, "Deployment", "-openwebui"), kp.index([*docs, *hostile]))
    (owui,) = [c for c in pod.containers if c.name == "open-webui"]
    assert dict(owui.env)["WEBUI_AUTH"] == "true"
    # Also over openwebui.env, which goes into the chart's ConfigMap (an envFrom source as well).
    assert env_of(one(render({"openwebui": {"env": {"WEBUI_AUTH": "true"}}}), "Deployment", "-openwebui")
                  ["spec"]["template"]["spec"]["containers"][0])["WEBUI_AUTH"] == "true"


def _resolved_owui_env(values: dict, hostile: list[dict]) -> dict[str, str]:  # type: ignore[type-arg]
    """The env the kubelet gives Open WebUI's container (envFrom sources first, then env)."""
    docs = render(values)
    pod = kp.pod_of(one(docs, "Deployment", "-openwebui"), kp.index([*docs, *hostile]))
    (owui,) = [c for c in pod.containers if c.name == "open-webui"]
    return dict(owui.env)


def test_sign_up_is_set_in_the_container_env_so_no_env_from_source_can_open_it() -> None:
    """Issue 25 item 5 (Low): like WEBUI_AUTH, ENABLE_SIGNUP is in the container's env, so an extraEnvFrom
    Secret or ConfigMap holding ENABLE_SIGNUP=true loses; openwebui.env.ENABLE_SIGNUP stays the operator's
    one explicit override."""
    sneaky = {"openwebui": {"extraEnvFrom": [{"configMapRef": {"name": "sneaky"}}, {"secretRef": {"name": "sneakier"}}]}}
    hostile = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "sneaky"},
                "data": {"ENABLE_SIGNUP": "True"}},
               {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sneakier"},
                "stringData": {"ENABLE_SIGNUP": "true"}}]
    main = one(render(sneaky), "Deployment", "-openwebui")["spec"]["template"]["spec"]["containers"][0]
    assert [e for e in main["env"] if e["name"] == "ENABLE_SIGNUP"] == [{"name": "ENABLE_SIGNUP", "value": "false"}]
    assert _resolved_owui_env(sneaky, hostile)["ENABLE_SIGNUP"] == "false"
    assert yaml.safe_load(ENV_FILE.read_text())["ENABLE_SIGNUP"] == "false"  # the value it comes from
    opened = {"openwebui": {**sneaky["openwebui"], "env": {"ENABLE_SIGNUP": "true"}}}
    assert _resolved_owui_env(opened, hostile)["ENABLE_SIGNUP"] == "true"
    assert _resolved_owui_env({"openwebui": {"env": {"ENABLE_SIGNUP": "false"}}}, hostile)["ENABLE_SIGNUP"] == "false"


def test_sign_up_in_extra_env_is_refused() -> None:
    message = error_line({"openwebui": {"extraEnv": [{"name": "ENABLE_SIGNUP", "value": "false"}]}})
    assert message.startswith("openwebui.extraEnv: ENABLE_SIGNUP is set by the chart"), message
    assert "openwebui.env.ENABLE_SIGNUP" in message


@pytest.mark.parametrize("entry", [
    {"name": "WEBUI_AUTH", "valueFrom": {"secretKeyRef": {"name": "s", "key": "auth"}}},
    {"name": "WEBUI_AUTH", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "auth"}}},
    {"name": "WEBUI_AUTH", "value": ""},
    {"name": "WEBUI_AUTH"},
    {"name": "WEBUI_AUTH", "value": "true"},
])
def test_webui_auth_in_extra_env_is_refused_in_every_form(entry: dict) -> None:  # type: ignore[type-arg]
    """extraEnv lands in the container's env AFTER the chart's entries, where it would win: no form passes, not
    a valueFrom the chart cannot read, not an empty value (Open WebUI reads "" as false)."""
    message = error_line({"openwebui": {"extraEnv": [{"name": "OTHER", "value": "x"}, entry]}})
    assert "WEBUI_AUTH" in message and ("refused" in message or "remove it" in message), message


def _notes(values: dict) -> str:  # type: ignore[type-arg]
    return next(text for path, text in render_raw(values).items() if path.endswith("NOTES.txt"))


def test_notes_print_the_scheme_that_is_true() -> None:
    plain = _notes({"openwebui": {"ingress": {"enabled": True, "host": "rag.example.fr"}, **ADMIN}})
    assert "http://rag.example.fr/" in plain and "https://" not in plain
    assert "no openwebui.ingress.tls" in plain
    tls = _notes({"openwebui": {"ingress": {"enabled": True, "host": "rag.example.fr",
                                            "tls": [{"secretName": "rag-tls", "hosts": ["rag.example.fr"]}]},
                                **ADMIN}})
    assert "https://rag.example.fr/" in tls and "no openwebui.ingress.tls" not in tls
    local = _notes({})
    assert "http://localhost:8080/" in local and "https://" not in local
    assert "first account to sign up becomes admin" in local
    assert "Secret owui-admin" in _notes({"openwebui": {"admin": {"existingSecret": "owui-admin"}}})
