"""`make cluster-smoke`: what `helm template` renders for a chart example, run with podman in Kubernetes' order.

Stages, each timed:
  1. StatefulSet ragdb: its pod, the PVC from volumeClaimTemplates as a podman volume, until its probes pass;
  2. Job migrate: init container wait-for-postgres, then `ragfr migrate`, to completion;
  2b. Deployment ollama, its image replaced by the project's Ollama-API test double, until its probes pass;
  3. Deployment openwebui: its init containers wait-for-schema, copy-stock-openwebui and apply-french-patch,
     then its open-webui container with the patch check of its readiness probe as the command;
  4. Pod test (the chart's `helm test` hook): its schema and french checks against the migrated database.
Every command, argument, env value (ConfigMaps and Secrets resolved), mount, user, read-only root and dropped
capability is the rendered one (ragfr_tools.kubesim.pods). What is NOT run, and every stand-in, is listed in
NOT_RUN / STAND_INS below and in docs/install.md; pods.DEVIATIONS lists how podman differs from a kubelet.

Everything created is named `<prefix>-...` and removed at the end, whatever happened.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from ragfr_tools.kubesim import pods as kp
from ragfr_tools.kubesim.runner import PODMAN, Cluster, SmokeFailure, Stage
from ragfr_tools.repo import REPO

CHART = REPO / "charts" / "ragfr"
RELEASE = NAMESPACE = "ragfr"
OPENWEBUI_WHEEL = "open-webui==0.12.4"
MINBASE = "localhost/ragfr-bookworm-minbase:1"

# Rendered image -> why it is replaced. The stock image cannot be pulled here (no registry): its stand-in
# holds the same /app/backend/open_webui tree, taken from the open-webui 0.12.4 wheel, which is all the
# init container that uses it (copy-stock-openwebui: cp -R /app/backend/open_webui /patched/) reads.
STAND_INS = {
    "ghcr.io/open-webui/open-webui:v0.12.4": "the open_webui package of the open-webui 0.12.4 wheel at "
    "/app/backend/open_webui on the Debian 12 minbase with Debian's CPython 3.11 as `python` (the stock image's "
    "layout and interpreter version, without Open WebUI's dependencies)",
    "ollama/ollama:0.12.10": "the project's Ollama-API TEST DOUBLE (python -m ragfr_tools.devserver on "
    "0.0.0.0:11434: real offline e5 embeddings, extractive chat; not a language model), no Ollama binary exists here",
}
# What the chart renders that this smoke does not run yet, and why.
NOT_RUN = (
    "Job pull-models (it runs the Ollama CLI, which the test double standing in for Ollama does not have)",
    "Deployment openwebui's init container cache-reranker and its open-webui container's own process (need the "
    "full Open WebUI runtime image and an offline cross-encoder); hence no sign-up, knowledge base or chat "
    "through its API. The container is run once with its readiness probe's patch check (`python -m "
    "ragfr.owui.check --open-webui-dir /app/backend`, without the /health half) as its command",
    "the helm test's health and patch checks (they query the running Open WebUI): the test pod runs with "
    "args [schema, french]",
    "Deployment redis, CNPG objects, Ingress, PodDisruptionBudget, NetworkPolicies (not in the default example "
    "or not enforceable here)",
)
OPENWEBUI_INIT_RUN = ("wait-for-schema", "copy-stock-openwebui", "apply-french-patch")
HELM_TEST_CHECKS = ["schema", "french"]

Mutation = Callable[[list[kp.Manifest]], None]


def render(example: str = "default", overrides: dict[str, Any] | None = None) -> list[kp.Manifest]:
    """The objects `helm template ragfr charts/ragfr -f examples/<example>.yaml` prints (offline Helm v4)."""
    import helm_python as helm

    values = yaml.safe_load((CHART / "examples" / f"{example}.yaml").read_text()) or {}
    _merge(values, overrides or {})
    out = helm.Chart.load(CHART).render(values, name=RELEASE, namespace=NAMESPACE, revision=1, is_install=True)
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


def _podman(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=900)


def openwebui_layout_image(*, modify: str = "") -> str:
    """Builds (once per input) the stand-in for the stock Open WebUI image; returns its reference.

    modify: a file under open_webui/ to append a comment to (a "locally modified" stock image, which the
    French patch must refuse).
    """
    build = REPO / ".build" / "kubesim"
    wheels = build / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob("open_webui-0.12.4-*.whl"))
    if not found:
        # pip's cache makes this a copy after the first time (.venv-owui was installed from the same file).
        subprocess.run([str(REPO / ".venv" / "bin" / "pip"), "download", "-q", "--no-deps", "--only-binary=:all:",
                        "-d", str(wheels), OPENWEBUI_WHEEL], check=True, capture_output=True, timeout=600)
        found = sorted(wheels.glob("open_webui-0.12.4-*.whl"))
    wheel = found[0]
    key = hashlib.sha256(f"{wheel.name} {wheel.stat().st_size} {modify} python3".encode()).hexdigest()[:12]
    tag = f"localhost/ragfr-smoke/open-webui-layout:{key}"
    if _podman("image", "exists", tag).returncode == 0:
        return tag
    if _podman("image", "exists", MINBASE).returncode != 0:
        raise SmokeFailure(f"{MINBASE} is missing: `make images` (scripts/build-image.sh --local-base) makes it")
    with tempfile.TemporaryDirectory(prefix="ragfr-owui-layout-") as tmp:
        ctx = Path(tmp)
        backend = ctx / "app" / "backend"
        with zipfile.ZipFile(wheel) as z:
            z.extractall(backend, [n for n in z.namelist() if n.startswith("open_webui/")])
        if modify:
            with (backend / modify).open("a") as f:
                f.write("# local edit (cluster smoke: a modified stock image)\n")
        (ctx / "Containerfile").write_text(
            f"FROM {MINBASE}\n"
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
            "-t bookworm python3 python-is-python3 && rm -rf /var/lib/apt/lists/*\n"
            "COPY app /app\nRUN chmod -R a+rX /app\n"
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nWORKDIR /app/backend\n"
            'CMD ["bash", "start.sh"]\n')
        done = _podman("build", "-q", "--network", "host", "-t", tag, str(ctx))
        if done.returncode != 0:
            raise SmokeFailure(f"building the Open WebUI layout stand-in failed: {done.stderr[-500:]}")
    return tag


def ollama_double_image() -> str:
    """Builds (once per source tree) the image of the Ollama-API test double; returns its reference."""
    def digest(*roots: Path) -> str:
        h = hashlib.sha256()
        for root in roots:
            for f in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
                h.update(f"{f.relative_to(REPO)}\0".encode() + f.read_bytes())
        return h.hexdigest()[:12]

    key = digest(REPO / "src", REPO / "tools" / "ragfr_tools", REPO / "migrations")
    tag = f"localhost/ragfr-smoke/ollama-double:{key}"
    if _podman("image", "exists", tag).returncode == 0:
        return tag
    pip = str(REPO / ".venv" / "bin" / "pip")
    with tempfile.TemporaryDirectory(prefix="ragfr-ollama-double-") as tmp:
        ctx = Path(tmp)
        wheels = ctx / "wheels"
        # Wheels from copies: building in place would leave build/ and *.egg-info in the checkout.
        for name, files in (("ragfr", ["pyproject.toml", "README.md", "src"]), ("tools", ["tools"])):
            copy_dir = ctx / f"src-{name}"
            copy_dir.mkdir()
            subprocess.run(f"tar -C {REPO} --exclude=__pycache__ -chf - {' '.join(files)} | tar -C {copy_dir} -xf -",
                           shell=True, check=True)
            project = copy_dir / ("tools" if name == "tools" else "")
            subprocess.run([pip, "wheel", "-q", "--no-deps", "-w", str(wheels), str(project)], check=True,
                           capture_output=True, timeout=600)
        subprocess.run([pip, "download", "-q", "--only-binary=:all:", "--python-version", "3.11", "--platform",
                        "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64", "--implementation", "cp",
                        "--find-links", str(wheels), "-d", str(wheels), "ragfr[local]", "ragfr-tools"],
                       check=True, capture_output=True, timeout=600)
        (ctx / "Containerfile").write_text(
            f"FROM {MINBASE}\n"
            "ENV PATH=/opt/double/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "
            "PYTHONDONTWRITEBYTECODE=1\n"
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
            "-t bookworm python3 python3-venv && rm -rf /var/lib/apt/lists/*\n"
            "COPY wheels /tmp/wheels\n"
            "RUN python3 -m venv /opt/double && /opt/double/bin/pip install -q --no-index --find-links /tmp/wheels "
            "'ragfr[local]' ragfr-tools && rm -rf /tmp/wheels\n"
            'LABEL org.opencontainers.image.description="ragfr Ollama-API TEST DOUBLE for the cluster smoke; '
            'not Ollama, not a language model"\n'
            'ENTRYPOINT ["python", "-m", "ragfr_tools.devserver", "--host", "0.0.0.0", "--port", "11434"]\n')
        done = _podman("build", "-q", "--network", "host", "-t", tag, str(ctx))
        if done.returncode != 0:
            raise SmokeFailure(f"building the Ollama test double image failed: {done.stderr[-500:]}")
    return tag


def _only_helm_test_checks(docs: list[kp.Manifest]) -> None:
    for d in docs:
        if d["kind"] == "Pod" and d["metadata"].get("annotations", {}).get("helm.sh/hook") == "test":
            d["spec"]["containers"][0]["args"] = list(HELM_TEST_CHECKS)


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
        log: Callable[[str], None] = print) -> list[Stage]:
    """Runs the stages; returns their wall times. Raises SmokeFailure naming the cause."""
    docs = render(example, overrides)
    if mutate:
        mutate(docs)
    _only_helm_test_checks(docs)
    started = time.monotonic()
    images = {"ghcr.io/open-webui/open-webui:v0.12.4": openwebui_layout_image(modify=modify_stock_file),
              "ollama/ollama:0.12.10": ollama_double_image()}
    assert set(images) == set(STAND_INS)
    stages = [Stage("stand-in images (open-webui layout, Ollama test double)", time.monotonic() - started)]
    cluster = Cluster(docs, prefix=prefix, workdir=workdir or Path(tempfile.mkdtemp(prefix=f"{prefix}-")),
                      image_map=images)
    try:
        log(f"cluster-smoke: ragdb ({example})")
        cluster.start(cluster.workload(*_component(docs, "StatefulSet", "ragdb")))
        log("cluster-smoke: migrations Job")
        cluster.start(cluster.workload(*_component(docs, "Job", "migrate")), run_to_completion=True)
        log("cluster-smoke: Ollama (the Ollama-API test double)")
        cluster.start(cluster.workload(*_component(docs, "Deployment", "ollama")))
        log("cluster-smoke: Open WebUI init containers " + ", ".join(OPENWEBUI_INIT_RUN))
        owui = cluster.workload(*_component(docs, "Deployment", "openwebui"))
        cluster.start(owui, only_init=OPENWEBUI_INIT_RUN)
        log("cluster-smoke: Open WebUI container: the patch check of its readiness probe")
        cluster.check_in_pod(owui, "open-webui", _patch_check(owui), what="readiness patch check")
        log(cluster.last_logs)
        log("cluster-smoke: helm test pod (" + ", ".join(HELM_TEST_CHECKS) + ")")
        cluster.start(cluster.workload(*_component(docs, "Pod", "test")), run_to_completion=True)
        log(cluster.last_logs)
    finally:
        cluster.teardown()
    return stages + cluster.stages


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
    print(f"cluster-smoke: OK in {time.monotonic() - started:.1f} s; not run here: " + "; ".join(NOT_RUN))
    return 0


if __name__ == "__main__":
    sys.exit(main())

