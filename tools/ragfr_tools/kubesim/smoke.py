"""`make cluster-smoke`: what `helm template` renders for a chart example, run with podman in Kubernetes' order.

Stages, each timed:
  1. StatefulSet ragdb: its pod, the PVC from volumeClaimTemplates as a podman volume, until its probes pass;
  2. Job migrate: init containers wait-for-postgres and db-roles, then `ragfr migrate --app-role`, to completion;
  3. Deployment ollama, its image replaced by the project's Ollama-API test double, until its probes pass; its
     model volume is filled as docs/runbooks/ollama-models-offline.md does (a tar of models/blobs + models/manifests
     streamed into `tar -xf -` in the Ollama container, as its user), first with the embedding model under
     ANOTHER tag than the release's: the release lacks one model;
  4. Deployment openwebui: ALL its init containers (wait-for-schema, wait-for-grants, db-passfile, copy-stock-openwebui,
     apply-french-patch), the patch check of its readiness probe run alone in the container's place (a clear
     message before a minute of start-up), then the open-webui container itself until its startup probe passes;
     the models gate: its readiness probe fails naming the missing model, so does the helm test Pod's models
     check, and the probe still fails after it; the model copied in by its exact tag, the pod turns Ready;
  5. an analyst's first session through the running Open WebUI's HTTP API: sign up, knowledge base "Contrats",
     upload of a French contract, an inflected question (the theft article comes back with its ragfr ranks,
     one model call) and an off-domain one (refused by the evidence gate, no model call);
  6. Pod test (the chart's `helm test` hook), every check: schema, french, health, patch.
The chart is rendered with the example's values plus SMOKE_VALUES (each one needed by a stand-in, and said why).
Every command, argument, env value (ConfigMaps and Secrets resolved), mount, user, read-only root and dropped
capability is the rendered one (ragfr_tools.kubesim.pods). What is NOT run, and every stand-in, is listed in
NOT_RUN / STAND_INS below and in docs/reference/testing.md; pods.DEVIATIONS lists how podman differs from a kubelet.

Everything created is named `<prefix>-...` and removed at the end, whatever happened.
"""

from __future__ import annotations

import argparse
import json
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from ragfr.owui.runtime.chat_gate import REFUSAL
from ragfr.retrieval import passage_keys as keys
from ragfr.retrieval.arms import BUILTIN, LEXICAL
from ragfr_tools import fixtures
from ragfr_tools import owui_client as client
from ragfr_tools.devserver.server import store_tar
from ragfr_tools.kubesim import pods as kp
from ragfr_tools.kubesim import standins
from ragfr_tools.kubesim.runner import Cluster, SmokeFailure, Stage
from ragfr_tools.repo import REPO

CHART = REPO / "charts" / "ragfr"
RELEASE = NAMESPACE = "ragfr"
DOUBLE_EMBEDDING_MODEL = "multilingual-e5-small-test-double:smoke"
# The chart's chat model in the smoke: the double chats (extractively) as any model in its store but the embedding one.
CHAT_MODEL = "ragfr-extractive-test-double:smoke"
# What the model store holds at first: the embedding model under another tag than the release's (a copy made with
# a bare `ollama pull` stores ":latest"), which must not satisfy the exact-tag check.
WRONG_TAG = "latest"

# Rendered image -> what runs instead (ragfr_tools.kubesim.standins builds both).
STAND_INS = {
    "ghcr.io/open-webui/open-webui:v0.12.4": "an image with the stock image's layout built from the open-webui "
    "0.12.4 wheel (open_webui at /app/backend/open_webui, the frontend at /app/build, `bash start.sh` in "
    "/app/backend as CMD, start.sh reduced to the stock one's final uvicorn command) and the dependencies "
    "installed in .venv-owui, on the Debian 12 minbase with Debian's CPython 3.11 and curl",
    "ollama/ollama:0.12.10": "the project's Ollama-API TEST DOUBLE (python -m ragfr_tools.devserver on "
    "0.0.0.0:11434: real offline e5 embeddings, extractive chat; not a language model), no Ollama binary exists here",
}
# Values the smoke sets over the example, each because of a stand-in; everything else is the example's.
SMOKE_VALUES: dict[str, Any] = {
    # The test double embeds with multilingual-e5-small (384 dims); bge-m3 cannot run here. The tag pins the
    # name as the chart requires; the double is started answering to exactly this name.
    "embedding": {"model": DOUBLE_EMBEDDING_MODEL, "dims": 384},
    # Not a stand-in: what an operator who imported the images sets (examples/k3s-first-install.yaml). The chart
    # then names localhost/ragfr/<name>:<version> with pullPolicy Never, the names `make images` gives them here.
    "global": {"imageSource": "imported"},
    # The double's chat model, pinned by tag as the chart requires; the smoke copies it into the model store.
    "ollama": {"models": {"chat": CHAT_MODEL}},
    "openwebui": {"env": {
        # e5 is asymmetric: Open WebUI sends these prefixes and the double reads them (bge-m3 needs none).
        "RAG_EMBEDDING_QUERY_PREFIX": "query: ",
        "RAG_EMBEDDING_CONTENT_PREFIX": "passage: ",
    }},
}
# What the chart renders that this smoke does not run, and why.
NOT_RUN = (
    "Job pull-models (it runs the Ollama CLI, which the test double standing in for Ollama does not have)",
    "Deployment redis, CNPG objects, Ingress, PodDisruptionBudget, NetworkPolicies (not in the default example "
    "or not enforceable here)",
)
# Said only when the example renders no reranker (the default): with one, its init containers run.
NO_RERANKER = ("Deployment openwebui's init containers cache-reranker and copy-reranker-cache: the chart's default "
               "names no cross-encoder (issue 29, docs/retrieval-quality.md), so it does not render them")

Mutation = Callable[[list[kp.Manifest]], None]


def render(example: str = "default", overrides: dict[str, Any] | None = None,
           chart: Path = CHART) -> list[kp.Manifest]:
    """The objects `helm template ragfr charts/ragfr -f examples/<example>.yaml` prints (offline Helm v4);
    `chart`: another release's chart (the upgrade smoke's previous one)."""
    import helm_python as helm

    values = yaml.safe_load((chart / "examples" / f"{example}.yaml").read_text()) or {}
    _merge(values, overrides or {})
    out = helm.Chart.load(chart).render(values, name=RELEASE, namespace=NAMESPACE, revision=1, is_install=True)
    docs: list[kp.Manifest] = []
    for path, text in sorted(out.items()):
        if not path.endswith("NOTES.txt"):
            docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs


def _merge(into: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _patch_check(pod: kp.Pod) -> list[str]:
    """The first half of the open-webui container's readiness probe (`sh -c "<check> && curl …/health"`)."""
    [c] = [c for c in pod.containers if c.name == "open-webui"]
    probe = (c.readiness_probe or {}).get("exec", {}).get("command", [])
    if len(probe) != 3 or probe[:2] != ["sh", "-c"] or " && " not in probe[2]:
        raise SmokeFailure(f"{pod.workload}: the open-webui readiness probe is no longer `sh -c '<check> && …'`")
    return ["sh", "-c", probe[2].split(" && ")[0].replace(" >/dev/null", "")]


def _component(docs: Sequence[kp.Manifest], kind: str, component: str) -> tuple[str, str]:
    for d in docs:
        labels = d["metadata"].get("labels") or {}
        if d["kind"] == kind and labels.get("app.kubernetes.io/component") == component:
            return kind, d["metadata"]["name"]
    raise SmokeFailure(f"the rendered chart has no {kind} for component {component!r}")


def run(*, prefix: str, example: str = "default", overrides: dict[str, Any] | None = None,
        workdir: Path | None = None, mutate: Mutation | None = None, modify_stock_file: str = "",
        log: Callable[[str], None] = print, models_gate_first: bool = True) -> list[Stage]:
    """Runs the stages; returns their wall times. Raises SmokeFailure naming the cause.

    models_gate_first=False: the model volume gets every model at once and the models gate is not shown
    (tests proving something else save its helm test run)."""
    values: dict[str, Any] = json.loads(json.dumps(SMOKE_VALUES))
    _merge(values, overrides or {})
    docs = render(example, values)
    if mutate:
        mutate(docs)
    started = time.monotonic()
    images = {"ghcr.io/open-webui/open-webui:v0.12.4": standins.openwebui_image(modify=modify_stock_file),
              "ollama/ollama:0.12.10": standins.ollama_double_image(DOUBLE_EMBEDDING_MODEL)}
    assert set(images) == set(STAND_INS)
    images.update(built_images())
    stages = [Stage("stand-in images (Open WebUI from its wheel, Ollama test double)", time.monotonic() - started)]
    cluster = Cluster(docs, prefix=prefix, workdir=workdir or Path(tempfile.mkdtemp(prefix=f"{prefix}-")),
                      image_map=images)
    try:
        log(f"cluster-smoke: ragdb ({example})")
        cluster.start(cluster.workload(*_component(docs, "StatefulSet", "ragdb")))
        log("cluster-smoke: migrations Job")
        cluster.start(cluster.workload(*_component(docs, "Job", "migrate")), run_to_completion=True)
        log("cluster-smoke: one run of the collection-graphs CronJob (ragfr filter-index sync as the owner)")
        cluster.start(cluster.workload(*_component(docs, "CronJob", "collection-graphs")), run_to_completion=True)
        log("cluster-smoke: Ollama (the Ollama-API test double)")
        ollama = cluster.workload(*_component(docs, "Deployment", "ollama"))
        double = f"http://{cluster.start(ollama)}:11434"
        test = cluster.workload(*_component(docs, "Pod", "test"))
        wanted = release_models(test)
        lacking = wanted[0]
        first = [f"{lacking.rsplit(':', 1)[0]}:{WRONG_TAG}", *wanted[1:]] if models_gate_first else wanted
        log(f"cluster-smoke: the release names {', '.join(wanted)}; the model volume gets {', '.join(first)}")
        fill_models(cluster, ollama, first)
        owui = cluster.workload(*_component(docs, "Deployment", "openwebui"))
        log("cluster-smoke: Open WebUI init containers " + ", ".join(c.name for c in owui.init_containers))
        ip = cluster.start(owui, init_only=True)
        log("cluster-smoke: Open WebUI container: the patch check of its readiness probe")
        cluster.check_in_pod(owui, "open-webui", _patch_check(owui), what="readiness patch check")
        log(cluster.last_logs)
        if models_gate_first:
            log("cluster-smoke: Open WebUI container (bash start.sh), until its startup probe passes")
            cluster.run_containers(owui, wait_ready=600, until_ready=False)
            log(f"cluster-smoke: models gate: {lacking} missing")
            log(models_gate(cluster, owui, test, ollama, lacking))
        else:
            log("cluster-smoke: Open WebUI container (bash start.sh), until its startup and readiness probes pass")
            cluster.run_containers(owui, wait_ready=600)
        log("cluster-smoke: through Open WebUI's HTTP API: sign up, knowledge base, two French questions")
        t0 = time.monotonic()
        log(analyst(f"http://{ip}:8080", double, lambda: cluster.full_logs(owui, "open-webui"), gate_scale(owui)))
        cluster.stages.append(Stage("Open WebUI API: sign-up, knowledge base, upload, 2 questions",
                                    time.monotonic() - t0))
        log("cluster-smoke: helm test pod")
        if test.name in cluster.prepared:
            cluster.delete(test)  # the chart's hook-delete-policy: before-hook-creation
        cluster.start(test, run_to_completion=True)
        log(cluster.last_logs)
    finally:
        cluster.teardown()
    return stages + cluster.stages


def release_models(test: kp.Pod) -> list[str]:
    """The models the release names, as its helm test Pod checks them: Open WebUI's embedding model first."""
    env = dict(next(c for c in test.containers if c.name == "test").env)
    return list(dict.fromkeys([env["EMBEDDING_MODEL"], *env.get("OLLAMA_MODELS", "").split()]))


def fill_models(cluster: Cluster, ollama: kp.Pod, names: list[str]) -> str:
    """The offline runbook's copy (docs/runbooks/ollama-models-offline.md): a tar of models/blobs and
    models/manifests streamed into `tar -C <the volume's mount> -xf -` in the running Ollama container, as its
    user. The double reads its store at each request, as Ollama's /api/tags does."""
    [c] = ollama.containers
    [home] = [m.path for m in c.mounts if ollama.volumes[m.volume].kind == "persistentVolumeClaim"]
    if dict(c.env).get("OLLAMA_MODELS") != f"{home}/models":
        raise SmokeFailure(f"{ollama.workload}: OLLAMA_MODELS is not models/ in the model volume ({home}): the "
                           "offline runbook's layout no longer holds")
    return cluster.exec_input(ollama, c.name, ["tar", "-C", home, "-xf", "-"], store_tar(names))


def models_gate(cluster: Cluster, owui: kp.Pod, test: kp.Pod, ollama: kp.Pod, lacking: str) -> str:
    """With `lacking` missing from Ollama: Open WebUI's readiness probe fails naming it, so does the helm test
    Pod's models check, and the probe still fails after; once the model is copied in, Open WebUI turns Ready.
    Returns what to print; raises SmokeFailure naming what differed."""
    started = time.monotonic()
    ready, said = cluster.readiness(owui, "open-webui")
    if ready or lacking not in said:
        raise SmokeFailure(f"Open WebUI's readiness probe {'passed' if ready else 'failed'} while Ollama lacks "
                           f"{lacking}: {said[-600:]}")
    try:
        cluster.start(test, run_to_completion=True)
    except SmokeFailure as exc:
        failed = str(exc)
    else:
        raise SmokeFailure(f"helm test passed while Ollama lacks {lacking}:\n{cluster.last_logs}")
    models_line = next((line.strip() for line in failed.splitlines() if "FAIL models:" in line), "")
    if lacking not in models_line:
        raise SmokeFailure(f"helm test failed without naming {lacking} in its models check:\n{failed}")
    still, _ = cluster.readiness(owui, "open-webui")
    if still:
        raise SmokeFailure(f"Open WebUI's readiness probe passed after helm test while Ollama still lacks {lacking}")
    fill_models(cluster, ollama, [lacking])
    cluster.wait_ready(owui, 120)
    cluster.stages.append(Stage(f"models gate ({lacking} missing, then copied in)", time.monotonic() - started))
    return (f"    PASS not Ready without {lacking}: {said}\n"
            f"    PASS helm test without it: {models_line}\n"
            f"    PASS Ready once {lacking} is in the model volume")


def built_images(listed: Path | None = None) -> dict[str, str]:
    """Rendered reference -> image ID, for the images `make images` built in THIS checkout (.build/images.built):
    a podman store shared with another checkout may have re-tagged ragfr/<name>:<appVersion> since.
    Raises SmokeFailure when the checkout's image inputs changed since that build: the smoke would run old code
    against the new chart and fail far from the cause (seen: `invalid choice: 'pgpass'`)."""
    listed = listed or REPO / ".build" / "images.built"
    if not listed.exists():
        return {}
    lines = [line.split() for line in listed.read_text().splitlines() if line.strip()]
    recorded = next((fields[2] for fields in lines if fields[:2] == ["#", "inputs"] and len(fields) == 3), None)
    now = subprocess.run(["bash", str(REPO / "scripts" / "images.sh"), "inputs"], capture_output=True, text=True,
                         check=False).stdout.strip()
    if recorded is None or (now != recorded and "unknown" not in (now, recorded)):
        raise SmokeFailure(f"the images in {listed} were built from other sources than this checkout's "
                           f"(inputs {recorded or 'not recorded'}, now {now or '?'}): run `make images` first")
    return {f[0]: f[1] for f in lines if f[0] != "#"}


def gate_scale(owui: kp.Pod) -> str:
    """The scale the evidence gate must decide on: the cross-encoder's when the rendered Open WebUI names a
    reranking model (its scores replace RRF's on the passages), else RRF's."""
    env = dict(next(c for c in owui.containers if c.name == "open-webui").env)
    return "cross-encoder" if env.get("RAG_RERANKING_MODEL", "").strip() else "rrf"


def not_run(docs: list[kp.Manifest]) -> tuple[str, ...]:
    rendered = json.dumps(docs)
    return NOT_RUN if "copy-reranker-cache" in rendered or "cache-reranker" in rendered else (NO_RERANKER, *NOT_RUN)


def analyst(url: str, double: str, owui_logs: Callable[[], str], scale: str = "rrf") -> str:
    """An analyst's first session, through the running Open WebUI: the passage that answers an inflected French
    question comes back with its ragfr ranks and one model call, the gate having decided on `scale` (with a
    cross-encoder: its sigmoid score on every passage); an off-domain one is refused with none.
    Returns what to print; raises SmokeFailure naming what differed."""
    def chats() -> int:
        counts = client.call("GET", double + "/ragfr/requests")
        return int(counts["chat"]) + int(counts["generate"])

    try:
        token = client.sign_up_admin(url)
        kb = client.knowledge_base(url, token, "Contrats", {fixtures.FILENAME: fixtures.CONTRACT})
        before = chats()
        reply = client.ask(url, token, CHAT_MODEL, fixtures.ANSWERABLE, kb)
        answered_calls = chats() - before
        before = chats()
        refusal = client.ask(url, token, CHAT_MODEL, fixtures.OFF_DOMAIN, kb)
        refused_calls = chats() - before
    except client.ApiError as exc:
        raise SmokeFailure(f"Open WebUI API: {exc}\nlast lines:\n{owui_logs()[-3000:]}") from exc
    got = client.passages(reply)
    theft = [m for d, m in got if fixtures.THEFT_SENTENCE in d]
    shown = "; ".join(f"rank {m.get(keys.RANK)} ("
                      + ", ".join(f"{arm.name} {m.get(keys.arm_rank(arm.name))}" for arm in BUILTIN)
                      + f"): {d[:60]!r}" for d, m in got)
    problems = []
    if not theft:
        problems.append(f"the theft article is not among the passages of {fixtures.ANSWERABLE!r}: {shown}")
    elif not (all(isinstance(theft[0].get(k), int) for k in (keys.RANK, keys.arm_rank(LEXICAL.name)))
              and theft[0].get("ragfr_chunk_id") and theft[0].get(keys.GATE)):
        problems.append(f"the passage has no ragfr ranks or gate decision (is the patch's retrieval running?): "
                        f"{theft[0]}")
    elif theft[0].get(keys.GATE) != "answer":
        problems.append(f"the gate did not answer {fixtures.ANSWERABLE!r}: {theft[0].get(keys.GATE)} "
                        f"({theft[0].get(keys.GATE_REASON)})")
    # On the RRF scale a fitted gate decides for the chart's embedding model too (the model-free one when none
    # was fitted for it, issue 47), never the rank rule; a cross-encoder scale keeps its calibrated threshold.
    rules = {m.get(keys.GATE_RULE) for _, m in got}
    if scale == "rrf" and rules != {"evidence"}:
        problems.append(f"the gate decided by {sorted(map(str, rules))}, expected a fitted gate ('evidence')")
    scales = {m.get("ragfr_gate_scale") for _, m in client.passages(reply) + client.passages(refusal)}
    if scales != {scale}:
        problems.append(f"the gate decided on {sorted(map(str, scales))}, expected {scale!r}")
    if scale == "cross-encoder" and not all(isinstance(m.get("score"), float) and 0 < m["score"] < 1
                                            for _, m in got):
        problems.append(f"the passages carry no cross-encoder score: {[m.get('score') for _, m in got]}")
    if answered_calls != 1:
        problems.append(f"{answered_calls} chat model calls for the answerable question (expected 1)")
    if not client.answer_text(refusal).startswith(REFUSAL):
        problems.append(f"{fixtures.OFF_DOMAIN!r} was answered: {client.answer_text(refusal)[:200]!r}")
    if refused_calls != 0:
        problems.append(f"{refused_calls} chat model calls below the evidence gate (expected 0)")
    if problems:
        raise SmokeFailure("Open WebUI API: " + "; ".join(problems))
    scores = f", {scale} scores {[round(m['score'], 4) for _, m in got]}" if scale == "cross-encoder" else ""
    rule = f" (rule {'/'.join(sorted(map(str, rules)))}, p {theft[0].get(keys.GATE_PROBABILITY)})"
    return (f"    PASS {fixtures.ANSWERABLE!r}: {shown}; gate on {scale}{rule}{scores}; 1 model call\n"
            f"    PASS {fixtures.OFF_DOMAIN!r}: refused ({REFUSAL!r}) on {scale}, 0 model calls")


def run_prefix() -> str:
    """A name prefix of this run's own: a fixed one met the objects a killed run had left (stop 18's CI)."""
    return f"ragfr-smoke-{secrets.token_hex(3)}"


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ragfr_tools.kubesim.smoke", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--example", default="default", help="charts/ragfr/examples/<name>.yaml (default: default)")
    parser.add_argument("--set-json", default="{}", help="extra values as JSON, merged over the example")
    parser.add_argument("--prefix", default=None,
                        help="name prefix of every podman object created (default: ragfr-smoke-<6 random hex "
                             "digits>, so that two runs sharing one podman store, or one killed before its "
                             "teardown, never meet)")
    args = parser.parse_args(argv)
    prefix = args.prefix or run_prefix()
    started = time.monotonic()
    # SIGTERM (CI's timeout, make interrupted) would end the process without the teardown in run()'s finally.
    signal.signal(signal.SIGTERM, _terminate)
    try:
        stages = run(example=args.example, overrides=json.loads(args.set_json), prefix=prefix)
    except SmokeFailure as exc:
        print(f"cluster-smoke: FAILED: {exc}", file=sys.stderr)
        return 1
    for stage in stages:
        print(f"cluster-smoke: {stage.seconds:6.1f} s  {stage.name}")
    values: dict[str, Any] = json.loads(json.dumps(SMOKE_VALUES))
    _merge(values, json.loads(args.set_json))
    skipped = not_run(render(args.example, values))
    print(f"cluster-smoke: OK in {time.monotonic() - started:.1f} s; not run here: " + "; ".join(skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())

