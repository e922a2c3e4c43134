"""`make cluster-smoke-upgrade`: an upgrade across a migration, with the real rendered pods on podman.

    python -m ragfr_tools.kubesim.upgrade [--previous COMMIT]

1. The previous release: by default the parent of the newest commit that added a file under migrations/ (so a
   release with one migration less), exported with `git archive` from this repository; its ragfr and owui-init
   images built from that tree (images/*/build.sh, the project's minbase; ragdb reused when its recipe is
   unchanged), its chart rendered with the cluster smoke's values (smoke.SMOKE_VALUES, same stand-ins).
2. Installed in Kubernetes order (ragdb, the migrations Job, Ollama's test double with every model, Open WebUI
   with all its init containers, until Ready); an analyst signs up, builds a knowledge base, asks two questions.
3. Upgraded to this checkout as `helm upgrade` does: the same claims (podman volumes) and the Secrets of the live
   release (the chart's generated passwords are looked up, never redrawn), every pod replaced by the new render's
   on this checkout's images (`make images`, .build/images.built).
4. Checked: the new migrations Job has another name and applies exactly the migrations the previous release
   lacked (ragfr_schema_migrations, read in the ragdb pod); the models volume was kept (Open WebUI turns Ready
   with no copy); the analyst signs in with the same password and finds the knowledge base and its file; the
   same questions give the same passages.
Everything created is named `<prefix>-...` and removed at the end, whatever happened.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from ragfr_tools import fixtures
from ragfr_tools import owui_client as client
from ragfr_tools.kubesim import pods as kp
from ragfr_tools.kubesim import smoke, standins
from ragfr_tools.kubesim.runner import Cluster, SmokeFailure, Stage
from ragfr_tools.repo import REPO

MINBASE = "localhost/ragfr-bookworm-minbase:1"
# What the ragdb image is built from (scripts/images.sh INPUTS for ragdb): unchanged -> this checkout's image.
RAGDB_INPUTS = ("images/ragdb", "scripts/build-image.sh", "tools/ragfr_tools/build/avx512_scan.py")


def git(*args: str, root: Path = REPO) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


def previous_release(root: Path = REPO) -> tuple[str, str]:
    """(commit, the migration it lacks): the parent of the newest commit that added a migration."""
    adding = git("log", "-1", "--format=%H", "--diff-filter=A", "--", "migrations/", root=root)
    if not adding:
        raise SmokeFailure("no commit adds a migration: nothing to upgrade across")
    added = [Path(p).stem for p in git("show", "--format=", "--name-only", "--diff-filter=A", adding, "--",
                                       "migrations/", root=root).split() if p.endswith(".sql")]
    return git("rev-parse", f"{adding}^", root=root), ", ".join(added)


def export(commit: str, dest: Path) -> Path:
    """The tree of `commit`, as `git archive` writes it (no .git: the previous release's files only)."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="tar")
    return dest


def _build(script: Path, tree: Path) -> str:
    done = subprocess.run(["bash", str(script), "--base", MINBASE], capture_output=True, text=True, timeout=3600,
                          env={**os.environ, "ROOT": str(tree), "PIP": str(REPO / ".venv/bin/pip")})
    if done.returncode != 0:
        raise SmokeFailure(f"building the previous release's image with {script.relative_to(tree)} failed: "
                           f"{done.stderr.strip()[-800:]}")
    return done.stdout.strip().splitlines()[-1]


def previous_images(tree: Path, current: dict[str, str], version: str) -> dict[str, str]:
    """Rendered reference (imported: localhost/ragfr/<name>:<version>) -> image, for the previous release."""
    ref = f"localhost/ragfr/{{}}:{version}".format
    images = {ref("ragfr"): _build(tree / "images/ragfr/build.sh", tree),
              ref("owui-init"): _build(tree / "images/owui-init/build.sh", tree)}
    same_ragdb = all(_tree_digest(tree, p) == _tree_digest(REPO, p) for p in RAGDB_INPUTS)
    here = next((image for r, image in current.items() if "/ragfr/ragdb:" in r), None)
    if not (same_ragdb and here):
        raise SmokeFailure("the previous release's ragdb recipe differs from this checkout's (or `make images` "
                           "was not run): this smoke reuses ragdb, it does not rebuild pgvector")
    images[ref("ragdb")] = here
    return images


def _tree_digest(root: Path, path: str) -> str:
    done = subprocess.run(["bash", "-c", f"cd {root} && find {path} -type f ! -path '*__pycache__*' -print0 | "
                                         "sort -z | xargs -0 sha256sum | sha256sum"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip()


def live_secrets(old: list[kp.Manifest], new: list[kp.Manifest]) -> None:
    """What the chart's `lookup` does on `helm upgrade`: a Secret the live release has keeps its data."""
    kept = {d["metadata"]["name"]: d for d in old if d["kind"] == "Secret"}
    for d in new:
        if d["kind"] == "Secret" and d["metadata"]["name"] in kept:
            live = kept[d["metadata"]["name"]]
            for field in ("data", "stringData"):
                d.pop(field, None)
                if field in live:
                    d[field] = json.loads(json.dumps(live[field]))


def applied(cluster: Cluster, ragdb: kp.Pod) -> list[str]:
    """The versions in ragfr_schema_migrations, read in the ragdb container (local socket, trust)."""
    [c] = [c for c in ragdb.containers if "ragdb" in c.image]
    out = cluster.exec_input(ragdb, c.name, ["psql", "-XAt", "-U", "postgres", "-d", "ragfr", "-c",
                                             "SELECT version || ' ' || name FROM ragfr_schema_migrations "
                                             "ORDER BY version"], b"")
    return [line.strip() for line in out.splitlines() if line.strip()]


def install(cluster: Cluster, docs: list[kp.Manifest], log: Callable[[str], None], *,
            fill: bool) -> tuple[kp.Pod, kp.Pod, kp.Pod, str, str]:
    """ragdb, the migrations Job, Ollama's double (with every model when `fill`), Open WebUI until Ready."""
    ragdb = cluster.workload(*smoke._component(docs, "StatefulSet", "ragdb"))
    cluster.start(ragdb)
    job = cluster.workload(*smoke._component(docs, "Job", "migrate"))
    log(f"cluster-smoke-upgrade: migrations Job {job.workload}")
    cluster.start(job, run_to_completion=True)
    ollama = cluster.workload(*smoke._component(docs, "Deployment", "ollama"))
    double = f"http://{cluster.start(ollama)}:11434"
    if fill:
        smoke.fill_models(cluster, ollama, smoke.release_models(cluster.workload(*smoke._component(docs, "Pod",
                                                                                                   "test"))))
    owui = cluster.workload(*smoke._component(docs, "Deployment", "openwebui"))
    ip = cluster.start(owui, wait_ready=600)
    return ragdb, ollama, owui, f"http://{ip}:8080", double


def kept(url: str, token: str, kb: str) -> dict[str, Any]:
    """What an upgrade must not lose, read through Open WebUI: the knowledge bases, the knowledge base's files
    with their bytes (the data volume), the passages its query returns (file, offset, chunk hash, text)."""
    api = url + "/api/v1"
    listed = client.call("GET", api + "/knowledge/", token=token)
    kbs = listed.get("items", []) if isinstance(listed, dict) else listed
    answer = client.call("GET", f"{api}/knowledge/{kb}/files", token=token)
    files = answer.get("items", []) if isinstance(answer, dict) else answer
    content = {}
    for f in files:
        request = urllib.request.Request(f"{api}/files/{f['id']}/content",
                                                headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=60) as got:
            content[f["id"]] = got.read().decode("utf-8")
    found = client.call("POST", api + "/retrieval/query/collection",
                        {"collection_names": [kb], "query": fixtures.ANSWERABLE, "k": 5}, token)
    passages = [(m.get("file_id"), m.get("start_index"), m.get("_chunk_hash"), d)
                for m, d in zip(found["metadatas"][0], found["documents"][0], strict=True)]
    return {"knowledge bases": sorted(str(k["id"]) for k in kbs), "files": content, "query": passages}


def ask_both(url: str, token: str, kb: str) -> dict[str, list[str]]:
    """Passage texts of the answerable and the off-domain question, in the order they came back."""
    return {q: [d for d, _ in client.passages(client.ask(url, token, smoke.CHAT_MODEL, q, kb))]
            for q in (fixtures.ANSWERABLE, fixtures.OFF_DOMAIN)}


def run(*, prefix: str, previous: str | None = None, workdir: Path | None = None,
        log: Callable[[str], None] = print) -> list[Stage]:
    """The upgrade across the newest migration; returns the stages' wall times, raises SmokeFailure."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
    commit, lacking = previous_release() if previous is None else (git("rev-parse", previous), "")
    t0 = time.monotonic()
    tree = export(commit, workdir / "previous")
    version = str(yaml.safe_load((tree / "charts/ragfr/Chart.yaml").read_text())["appVersion"])
    current = smoke.built_images()
    if not current:
        raise SmokeFailure("this checkout's images are not built: run `make images` first")
    log(f"cluster-smoke-upgrade: previous release {commit[:12]} (chart {version}, lacks {lacking or '?'}): "
        "building its ragfr and owui-init images")
    old_map = previous_images(tree, current, version)
    stand_ins = {"ghcr.io/open-webui/open-webui:v0.12.4": standins.openwebui_image(),
                 "ollama/ollama:0.12.10": standins.ollama_double_image(smoke.DOUBLE_EMBEDDING_MODEL)}
    stages = [Stage(f"previous release {commit[:12]}: export, images", time.monotonic() - t0)]
    values: dict[str, Any] = json.loads(json.dumps(smoke.SMOKE_VALUES))
    old_docs = smoke.render("default", values, chart=tree / "charts" / "ragfr")
    new_docs = smoke.render("default", values)
    live_secrets(old_docs, new_docs)
    old_job = smoke._component(old_docs, "Job", "migrate")[1]
    new_job = smoke._component(new_docs, "Job", "migrate")[1]
    cluster = Cluster(old_docs, prefix=prefix, workdir=workdir / "cluster", image_map={**stand_ins, **old_map})
    try:
        log("cluster-smoke-upgrade: installing the previous release")
        ragdb, ollama, owui, url, _ = install(cluster, old_docs, log, fill=True)
        before = applied(cluster, ragdb)
        t0 = time.monotonic()
        token = client.sign_up_admin(url)
        kb = client.knowledge_base(url, token, "Contrats", {fixtures.FILENAME: fixtures.CONTRACT})
        asked = ask_both(url, token, kb)
        stored = kept(url, token, kb)
        cluster.stages.append(Stage("previous release: sign-up, knowledge base, 2 questions", time.monotonic() - t0))
        if not any(fixtures.THEFT_SENTENCE in d for d in asked[fixtures.ANSWERABLE]):
            raise SmokeFailure(f"the previous release does not find the theft article: {asked}")
        if list(stored["files"].values()) != [fixtures.CONTRACT] or not stored["query"]:
            raise SmokeFailure(f"the previous release's knowledge base is not what was uploaded: {stored}")

        log(f"cluster-smoke-upgrade: upgrading to this checkout (Job {old_job} -> {new_job})")
        if new_job == old_job:
            raise SmokeFailure(f"the upgrade renders the same migrations Job {new_job}: it would never run")
        for pod in (owui, ollama, ragdb):  # Recreate / the StatefulSet's rolling update: claims are kept
            cluster.delete(pod)
        cluster.upgrade(new_docs, {**stand_ins, **current})
        ragdb, ollama, owui, url, _ = install(cluster, new_docs, log, fill=False)
        after = applied(cluster, ragdb)
        t0 = time.monotonic()
        token = client.call("POST", url + "/api/v1/auths/signin",
                            {"email": client.ADMIN["email"], "password": client.ADMIN["password"]})["token"]
        again = ask_both(url, token, kb)
        still = kept(url, token, kb)
        cluster.stages.append(Stage("upgraded release: sign-in, knowledge base, same 2 questions",
                                    time.monotonic() - t0))
    except client.ApiError as exc:
        raise SmokeFailure(f"Open WebUI API: {exc}") from exc
    finally:
        cluster.teardown()
    problems = []
    new = [m for m in after if m not in before]
    if not new or before != [m for m in after if m in before]:
        problems.append(f"migrations before {before}, after {after}: the upgrade applied none")
    # ragfr_schema_migrations holds the version as a number and the name without it: 17 / scrub_reserved_metadata.
    if lacking and sorted(f"{int(m.split()[0]):04d}_{m.split()[1]}" for m in new) != sorted(lacking.split(", ")):
        problems.append(f"the upgrade applied {new}, the previous release lacked {lacking}")
    for what in ("knowledge bases", "files", "query"):
        if still[what] != stored[what]:
            problems.append(f"{what} differ after the upgrade: before {stored[what]}, after {still[what]}")
    if again != asked:
        problems.append(f"the same questions give other passages after the upgrade: before {asked}, after {again}")
    if problems:
        raise SmokeFailure("; ".join(problems))
    log(f"    PASS migrations applied by the upgrade: {', '.join(new)} (Job {new_job}, previous {old_job})")
    log(f"    PASS knowledge base {kb}, {fixtures.FILENAME} (its bytes) and the query's chunks kept; the same "
        "passages for both questions")
    return stages + cluster.stages


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ragfr_tools.kubesim.upgrade", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--previous", default=None, help="the previous release's commit (default: the parent of "
                                                         "the newest commit that added a migration)")
    parser.add_argument("--prefix", default=None, help="name prefix of every podman object (default: random)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    started = time.monotonic()
    try:
        stages = run(prefix=args.prefix or smoke.run_prefix(), previous=args.previous)
    except SmokeFailure as exc:
        print(f"cluster-smoke-upgrade: FAILED: {exc}", file=sys.stderr)
        return 1
    for stage in stages:
        print(f"cluster-smoke-upgrade: {stage.seconds:6.1f} s  {stage.name}")
    print(f"cluster-smoke-upgrade: OK in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
