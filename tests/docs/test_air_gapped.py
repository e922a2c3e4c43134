"""Going air-gapped on a running release, and an embedding migration once there (issue 48), checked against the
chart's render: the runbooks' values keep the models' volume Ollama already fills, the model-copy runbook fills
the claim those values mount, the air-gapped example still admits only the ingress controller to Open WebUI, and
the embedding runbook's air-gapped path copies the new model before anything names it and waits for no pull Job
(none renders with `ollama.models.pull: false`)."""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any

import yaml
from tests.chart.test_networkpolicy import allowed
from tests.support.chart import CHART, example_values, one, pod_specs, render
from tests.support.paths import REPO

RUNBOOKS = REPO / "docs" / "runbooks"
TRAEFIK = {"_ns": "kube-system", "app.kubernetes.io/name": "traefik"}
NEW_MODEL = "nomic-embed-text:v1.5"


def merged(*layers: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for layer in layers:
        out = _merge(out, layer)
    return out


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in top.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def values_blocks(text: str) -> list[dict[str, Any]]:
    """The ```yaml my-values.yaml blocks of a page: keys the operator adds to my-values.yaml."""
    return [yaml.safe_load(textwrap.dedent(b)) or {}
            for b in re.findall(r"```yaml my-values\.yaml\n(.*?)\n\s*```", text, flags=re.S)]


def models_claim(docs: list[dict[str, Any]]) -> str:
    ollama = one(docs, "Deployment", "-ollama")["spec"]["template"]["spec"]
    (claim,) = [v["persistentVolumeClaim"]["claimName"] for v in ollama["volumes"] if "persistentVolumeClaim" in v]
    return str(claim)


def pull_jobs(docs: list[dict[str, Any]]) -> list[str]:
    return [d["metadata"]["name"] for d in docs if d["kind"] == "Job"
            and d["metadata"]["labels"].get("app.kubernetes.io/component") == "pull-models"]


def readiness_models(docs: list[dict[str, Any]]) -> str:
    pod = one(docs, "Deployment", "-openwebui")["spec"]["template"]["spec"]
    main = next(c for c in pod["containers"] if c["name"] == "open-webui")
    return " ".join(main["readinessProbe"]["exec"]["command"])


FIRST = example_values("k3s-first-install")


def test_going_air_gapped_keeps_the_models_volume_ollama_already_fills() -> None:
    connected = render(FIRST)
    text = (RUNBOOKS / "air-gapped-install.md").read_text()
    air_gapped = render(merged(FIRST, *values_blocks(text)))
    assert pull_jobs(connected) and not pull_jobs(air_gapped)
    # Same claim before and after, and still the chart's (rendered, so Helm keeps managing it).
    assert models_claim(air_gapped) == models_claim(connected) == "ragfr-ollama-models"
    assert one(air_gapped, "PersistentVolumeClaim", "-ollama-models")["metadata"]["name"] == "ragfr-ollama-models"
    # The example the runbook follows does the same.
    assert models_claim(render(merged(FIRST, example_values("air-gapped")))) == "ragfr-ollama-models"


def test_the_models_runbook_fills_the_claim_ollama_mounts() -> None:
    text = (RUNBOOKS / "ollama-models-offline.md").read_text()
    named = set(re.findall(r"kubectl -n ragfr get pvc (\S+)", text))
    assert named, "ollama-models-offline.md no longer names the claim it fills"
    air_gapped = render(merged(FIRST, *values_blocks((RUNBOOKS / "air-gapped-install.md").read_text())))
    assert named == {models_claim(air_gapped)}
    # The copy through the pod goes where Ollama reads: OLLAMA_MODELS under the claim's mount.
    ollama = one(air_gapped, "Deployment", "-ollama")["spec"]["template"]["spec"]
    main = next(c for c in ollama["containers"] if c["name"] == "ollama")
    env = {e["name"]: e.get("value") for e in main["env"]}
    assert "tar -C " + env["OLLAMA_MODELS"] + " -xf -" in text


def test_the_air_gapped_example_admits_only_the_ingress_controller() -> None:
    docs = render(example_values("air-gapped"))
    owui = next(obj["spec"]["template"]["metadata"]["labels"] for obj, _ in pod_specs(docs)
                if obj["metadata"]["name"] == "ragfr-openwebui")
    assert allowed(docs, TRAEFIK, owui, 8080)
    # Any other pod of the cluster (its first-admin page is on that port, the Service is a ClusterIP).
    assert not allowed(docs, {"_ns": "default", "app": "anything"}, owui, 8080)
    assert not allowed(docs, {"_ns": "ragfr", "app": "anything"}, owui, 8080)


def branch(text: str, marker: str) -> str:
    """The text of the page between `<!-- walk: {marker} -->` and the next walk marker."""
    m = re.search(rf"<!-- walk: {re.escape(marker)} -->\n(.*?)(?=<!-- walk: )", text, flags=re.S)
    assert m, f"no branch <!-- walk: {marker} -->"
    return m.group(1)


def sh_lines(text: str) -> list[str]:
    return [line.strip() for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S)
            for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_the_embedding_migration_has_an_air_gapped_path_that_keeps_the_interface_up() -> None:
    text = (RUNBOOKS / "embedding-migration.md").read_text()
    k8s = text[text.index("### Run it in Kubernetes"):]
    pulled, copied = branch(k8s, "embedding=k8s models=pulled"), branch(k8s, "embedding=k8s models=copied")
    air_gapped = merged(FIRST, *values_blocks((RUNBOOKS / "air-gapped-install.md").read_text()))

    # Connected: naming the model in extraEmbedding renders a pull Job, the one the page waits for, and keeps it
    # out of the chat models Open WebUI offers analysts for the whole backfill (an embedding model cannot chat).
    assert "component=pull-models" in pulled
    connected = render(merged(FIRST, *values_blocks(pulled)))
    assert pull_jobs(connected)
    assert NEW_MODEL in json.dumps(one(connected, "Pod", "-test"))  # helm test requires it, as the readiness does
    listed = json.loads(one(connected, "ConfigMap", "-openwebui-env")["data"]["OLLAMA_API_CONFIGS"])["0"]["model_ids"]
    assert NEW_MODEL not in listed

    # Air-gapped: no pull Job renders, so nothing may wait for one...
    assert not pull_jobs(render(air_gapped))
    assert "pull-models" not in "\n".join(sh_lines(copied))
    # ...and the model is copied into the running Ollama, by the models runbook's command, before any value
    # names it: the branch adds nothing to my-values.yaml and upgrades nothing.
    lines = sh_lines(copied)
    assert any("exec -i deploy/ragfr-ollama" in line and "tar -C /ollama/models -xf -" in line for line in lines)
    assert not values_blocks(copied) and not [line for line in lines if line.startswith(("helm", "make"))]
    assert f'MODELS="{NEW_MODEL}"' in copied

    # Why the order matters: once the page's later my-values.yaml names the model, Open WebUI's readiness
    # requires it, on pods that replace the running one.
    after = k8s[k8s.index("**Then update `my-values.yaml`**"):]
    final = render(merged(air_gapped, *values_blocks(after)))
    # (the probe asks Ollama for $RAG_EMBEDDING_MODEL, which the ConfigMap now sets to the new model)
    assert '"$RAG_EMBEDDING_MODEL"' in readiness_models(final)
    assert one(final, "ConfigMap", "-openwebui-env")["data"]["RAG_EMBEDDING_MODEL"] == NEW_MODEL
    assert not pull_jobs(final)
    # The switch comes after the copy, on both paths (the commands after the branches).
    common = k8s[k8s.index("<!-- walk: embedding=k8s -->\nThen, on either path"):]
    assert sh_lines(common)[0].startswith("ragfr embeddings k8s") and "--dry-run" in sh_lines(common)[0]


def test_no_runbook_points_the_models_at_another_claim() -> None:
    for page in ("air-gapped-install.md", "ollama-models-offline.md", "embedding-migration.md"):
        for block in values_blocks((RUNBOOKS / page).read_text()):
            assert "existingClaim" not in ((block.get("ollama") or {}).get("persistence") or {}), page
    assert "existingClaim" not in ((example_values("air-gapped").get("ollama") or {}).get("persistence") or {})
    assert (CHART / "examples" / "air-gapped.yaml").is_file()
