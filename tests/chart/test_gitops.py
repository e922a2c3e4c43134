"""GitOps (issue 28 item 4): Argo CD, Flux's Kustomizations and `helm template | kubectl apply` render every
revision as 1. The Jobs are named after a hash of their spec, so a change of their inputs runs them again
and nothing immutable changes under a name the cluster already has (docs/runbooks/gitops.md)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from tests.support.chart import Doc, error_line, example_values, render, render_raw

JOBS = ("migrate", "pull-models")

# Values that concern a Job: each must give it a new name (it runs again).
RERUN: dict[str, tuple[dict[str, Any], set[str]]] = {
    "embedding model": ({"embedding": {"model": "nomic-embed-text:v1.5", "dims": 768}}, {"migrate", "pull-models"}),
    "ragfr image": ({"migrations": {"image": {"tag": "9.9.9"}}}, {"migrate"}),  # never the appVersion
    "vector index": ({"migrations": {"vectorIndex": "vector"}}, {"migrate"}),
    "filter index": ({"migrations": {"filterIndexes": ["type=contrat"]}}, {"migrate"}),
    "chat model": ({"ollama": {"models": {"chat": "qwen2.5:7b"}}}, {"pull-models"}),
    "ollama image": ({"ollama": {"image": {"tag": "0.12.11"}}}, {"pull-models"}),
    "common labels": ({"commonLabels": {"team": "juridique"}}, {"migrate", "pull-models"}),
    # Running the migrations again on purpose (after a restore), same image and values.
    "run id": ({"migrations": {"runId": "restore-2026-12-02"}}, {"migrate"}),
}

# Values that do not concern a Job: its name and spec stay (not run again, not patched).
UNRELATED: dict[str, dict[str, Any]] = {
    "open webui env": {"openwebui": {"env": {"WEBUI_NAME": "Assistant juridique"}}},
    "open webui image": {"openwebui": {"image": {"tag": "v0.12.4"}, "replicas": 1}},
    "open webui ingress": {"openwebui": {"ingress": {"enabled": True, "host": "chat.lan", "tls": [
        {"secretName": "chat-tls", "hosts": ["chat.lan"]}]}, "admin": {"existingSecret": "ragfr-admin"}}},
    "ollama resources": {"ollama": {"resources": {"limits": {"memory": "12Gi"}}}},
    "ragdb storage": {"ragdb": {"persistence": {"size": "40Gi"}}},
    "backup": {"backup": {"enabled": True}},
    "argo cd hooks": {"gitops": {"argocdHooks": True}},
}


def jobs(values: dict[str, Any] | None = None) -> dict[str, Doc]:
    """The Jobs as `helm template` renders them (revision 1), by component."""
    return {d["metadata"]["labels"]["app.kubernetes.io/component"]: d
            for d in render(values, revision=1) if d["kind"] == "Job"}


def test_names_carry_a_hash_of_the_spec_not_the_revision() -> None:
    first, again = jobs(), jobs()
    assert set(first) == set(JOBS)
    for component, job in first.items():
        assert re.fullmatch(rf"ragfr-{component}-[0-9a-f]{{10}}", job["metadata"]["name"])
        # The same values, rendered again: the same name and spec (the Job is not run again, not patched).
        assert again[component] == job
    # A real `helm upgrade` (revision 2) keeps the name too: a Job runs when its inputs change.
    upgraded = {d["metadata"]["name"] for d in render(revision=2) if d["kind"] == "Job"}
    assert upgraded == {j["metadata"]["name"] for j in first.values()}


@pytest.mark.parametrize("change", list(RERUN))
def test_changed_inputs_give_a_new_name_so_the_job_runs_again(change: str) -> None:
    values, affected = RERUN[change]
    before, after = jobs(), jobs(values)
    for component in JOBS:
        renamed = before[component]["metadata"]["name"] != after[component]["metadata"]["name"]
        assert renamed == (component in affected), (change, component)


@pytest.mark.parametrize("change", [*UNRELATED, *RERUN])
def test_no_immutable_field_changes_under_the_same_name(change: str) -> None:
    values = UNRELATED.get(change) or RERUN[change][0]
    before, after = jobs(), jobs(values)
    for component in JOBS:
        old, new = before[component], after[component]
        if old["metadata"]["name"] == new["metadata"]["name"]:
            # spec.template (and the selector the API server derives from it) is immutable on a Job; the
            # whole spec is compared, which kubectl apply / Argo CD would otherwise patch.
            assert old["spec"] == new["spec"], (change, component)
    if change in UNRELATED:
        assert {j["metadata"]["name"] for j in before.values()} == {j["metadata"]["name"] for j in after.values()}


def test_no_template_uses_the_release_revision() -> None:
    # NOTES.txt included: it names the Jobs to follow. The example's secrets are given (a generated one differs
    # at every render, revision or not).
    values = example_values("gitops")
    rendered = render_raw(values, revision=1)
    assert rendered == render_raw(values, revision=9)
    notes = next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))
    for job in jobs(values).values():
        assert f"Job {job['metadata']['name']}:" in notes


def test_long_release_names_keep_the_whole_hash() -> None:
    names = [d["metadata"]["name"] for d in render({"fullnameOverride": "x" * 40}) if d["kind"] == "Job"]
    for name in names:
        assert len(name) <= 63 and re.search(r"-[0-9a-f]{10}$", name), name


def test_no_ttl_by_default_and_an_explicit_one_applies_to_both_jobs() -> None:
    # Argo CD (self-heal) or Flux would re-create a Job its TTL deleted and run it again.
    assert all("ttlSecondsAfterFinished" not in j["spec"] for j in jobs().values())
    assert {j["spec"]["ttlSecondsAfterFinished"] for j in jobs({"migrations": {"ttlSecondsAfterFinished": 3600}}).values()} == {3600}
    assert "ttlSecondsAfterFinished" in error_line({"migrations": {"ttlSecondsAfterFinished": -1}})


def test_the_gitops_example_generates_no_secret() -> None:
    # Rendered without a cluster, a generated password would change at every sync.
    assert not [d["metadata"]["name"] for d in render(example_values("gitops")) if d["kind"] == "Secret"]


def test_argocd_hooks_are_opt_in_sync_hooks_on_the_jobs_only() -> None:
    assert all("annotations" not in j["metadata"] for j in jobs().values())
    docs = render({**example_values("gitops"), "gitops": {"argocdHooks": True}})
    for d in docs:
        annotations = d["metadata"].get("annotations", {})
        if d["kind"] == "Job":
            # Sync, not PreSync: the internal database is applied in the Sync phase, and the Job waits for it.
            assert annotations == {"argocd.argoproj.io/hook": "Sync",
                                   "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation"}
        elif annotations.get("helm.sh/hook") != "test":  # `helm test`'s Pod: `helm template --skip-tests` drops it
            assert not [k for k in annotations if k.startswith(("argocd.argoproj.io/", "helm.sh/hook"))], d["kind"]


def test_no_helm_hooks() -> None:
    # A pre-install hook would run before the database exists; a post-install one waits, under --wait, for an
    # Open WebUI that waits for the schema.
    for values in ({}, example_values("gitops"), {"gitops": {"argocdHooks": True}}):
        hooks = {d["metadata"].get("annotations", {}).get("helm.sh/hook") for d in render(values)}
        assert hooks == {None, "test"}
