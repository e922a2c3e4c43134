"""Secure by default: sign-up closed, authentication never off, an optional first admin from a Secret,
NOTES that print the scheme that is true."""

from __future__ import annotations

import pytest
import yaml
from tests.support.chart import CHART, EXAMPLES, env_of, error_line, example_values, one, render, render_raw

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


def _notes(values: dict) -> str:  # type: ignore[type-arg]
    return next(text for path, text in render_raw(values).items() if path.endswith("NOTES.txt"))


def test_notes_print_the_scheme_that_is_true() -> None:
    plain = _notes({"openwebui": {"ingress": {"enabled": True, "host": "rag.example.fr"}}})
    assert "http://rag.example.fr/" in plain and "https://" not in plain
    assert "no openwebui.ingress.tls" in plain
    tls = _notes({"openwebui": {"ingress": {"enabled": True, "host": "rag.example.fr",
                                            "tls": [{"secretName": "rag-tls", "hosts": ["rag.example.fr"]}]}}})
    assert "https://rag.example.fr/" in tls and "no openwebui.ingress.tls" not in tls
    local = _notes({})
    assert "http://localhost:8080/" in local and "https://" not in local
    assert "first account to sign up becomes admin" in local
    assert "Secret owui-admin" in _notes({"openwebui": {"admin": {"existingSecret": "owui-admin"}}})
