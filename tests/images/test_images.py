"""`make images`, `make images-save` and `make images-push` (scripts/images.sh) against what the chart renders.

Needs the three images built (`make images`, which `make test` runs before pytest): a missing image fails here
with that instruction, never a skip. The push test uses a REAL registry: Debian 12's docker-registry
(distribution 2.8), started on a free loopback port with its own config and stopped afterwards. Pulls and loads
go into a separate, temporary podman storage so that the images compared really came back from the registry or
the archive, not from the local store.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.support.chart import CHART, render
from tests.support.kube_api import version_only_api
from tests.support.paths import REPO
from tests.support.registry import loopback_registry

PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file"]
NAMES = ("ragdb", "ragfr", "owui-init")
APP_VERSION = str(yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"])
# ragfr/reranker is built only where `make reranker` trained the model (scripts/images.sh OPTIONAL); when it is
# there, every command must carry it (tests/images/test_reranker_image.py builds one from a stand-in model).
RERANKER_VALUES = yaml.safe_load((CHART / "examples" / "reranker-image.yaml").read_text())


def present() -> tuple[str, ...]:
    done = subprocess.run([*PODMAN, "image", "exists", f"localhost/ragfr/reranker:{APP_VERSION}"])
    return NAMES + (("reranker",) if done.returncode == 0 else ())


def images_sh(*args: str, env: dict[str, str] | None = None) -> str:
    import os

    done = subprocess.run(["bash", str(REPO / "scripts" / "images.sh"), *args], capture_output=True, text=True,
                          timeout=1200, env={**os.environ, **(env or {})})
    assert done.returncode == 0, f"images.sh {' '.join(args)} failed:\n{done.stderr[-2000:]}"
    return done.stdout


def local_id(reference: str) -> str:
    done = subprocess.run([*PODMAN, "image", "inspect", "--format", "{{.Id}}", reference],
                          capture_output=True, text=True)
    assert done.returncode == 0, f"{reference} is not built: run `make images` first"
    return done.stdout.strip()


@pytest.fixture(scope="module")
def built() -> dict[str, str]:
    """name -> image ID of the local images under the references `make images` tags."""
    return {n: local_id(f"localhost/ragfr/{n}:{APP_VERSION}") for n in present()}


@pytest.fixture()
def scratch_store() -> Iterator[list[str]]:
    """podman with its own storage: what is pulled or loaded there cannot come from the local store."""
    # (podman refuses a runroot path longer than 50 characters: pytest's tmp_path is too long.)
    root = Path(tempfile.mkdtemp(prefix="ragfr-img-"))
    cmd = [*PODMAN, "--root", str(root / "root"), "--runroot", str(root / "run")]
    yield cmd
    subprocess.run([*cmd, "rmi", "--all", "--force"], capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


def check(cmd: list[str]) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{' '.join(cmd[7:])} failed: {done.stderr.strip()[-1500:]}"
    return done.stdout


def chart_references(values: dict[str, object] | None = None) -> set[str]:
    refs = set()
    for doc in render(values):
        spec = doc["spec"]["template"]["spec"] if doc["kind"] in ("Deployment", "StatefulSet", "Job") else (
            doc["spec"] if doc["kind"] == "Pod" else None)
        for c in (spec or {}).get("initContainers", []) + (spec or {}).get("containers", []):
            if "/ragfr/" in f"/{c['image']}":
                refs.add(c["image"])
    return refs


def test_chart_imported_references_are_the_built_tags(built: dict[str, str]) -> None:
    listed = images_sh("list").split()
    assert listed == [f"localhost/ragfr/{n}:{APP_VERSION}" for n in built]
    # With global.imageSource=imported the chart names the images as podman stores them (localhost/ragfr/...).
    imported = {"global": {"imageSource": "imported"}}
    assert chart_references(imported) == set(listed[:len(NAMES)])
    if "reranker" in built:
        assert chart_references({**RERANKER_VALUES, **imported}) == set(listed)


def test_ids_are_the_local_images(built: dict[str, str]) -> None:
    # `make images` ends with these lines (scripts/images.sh build calls the same `ids`).
    out = images_sh("ids")
    assert out.splitlines() == [f"localhost/ragfr/{n}:{APP_VERSION} {built[n]}" for n in built]


@pytest.fixture()
def registry(tmp_path: Path) -> Iterator[str]:
    with loopback_registry(tmp_path) as address:
        yield address


def registry_digest(address: str, repository: str, tag: str) -> str:
    request = urllib.request.Request(f"http://{address}/v2/{repository}/manifests/{tag}", method="HEAD", headers={
        "Accept": "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(response.headers["Docker-Content-Digest"])


def test_push_to_a_real_registry_then_pull_back(built: dict[str, str], registry: str,
                                                scratch_store: list[str]) -> None:
    out = images_sh("push", registry, env={"IMAGES_TLS_VERIFY": "false"})
    pushed = dict(line.split() for line in out.strip().splitlines())
    # The destinations are exactly what the chart renders with global.imageRegistry set to the registry.
    values = RERANKER_VALUES if "reranker" in built else {}
    assert set(pushed) == chart_references({**values, "global": {"imageRegistry": registry}})
    for name in built:
        dest = f"{registry}/ragfr/{name}:{APP_VERSION}"
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", pushed[dest])
        assert registry_digest(registry, f"ragfr/{name}", APP_VERSION) == pushed[dest]
        check([*scratch_store, "pull", "--quiet", "--tls-verify=false", dest])
        info = json.loads(check([*scratch_store, "image", "inspect", dest]))[0]
        assert info["Id"] == built[name], f"{dest}: pulled image differs from the local one"
        assert f"{registry}/ragfr/{name}@{pushed[dest]}" in info["RepoDigests"]


@pytest.fixture(scope="module")
def saved(built: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder `make images-save DIR=...` wrote, the ragfr images only (this machine reaches neither Docker Hub
    nor ghcr.io: the upstream part is tested against a loopback registry below)."""
    out_dir = tmp_path_factory.mktemp("saved") / "out"
    images_sh("save", str(out_dir), env={"IMAGES_UPSTREAM": "0"})
    return out_dir


def test_save_writes_oci_archives_that_load_back(built: dict[str, str], saved: Path,
                                                 scratch_store: list[str]) -> None:
    out_dir = saved
    files = sorted(p.name for p in out_dir.iterdir())
    assert files == sorted(["SHA256SUMS", *(f"{n}-{APP_VERSION}.oci.tar" for n in built)])
    subprocess.run(["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=out_dir, check=True)
    for name in built:
        archive = out_dir / f"{name}-{APP_VERSION}.oci.tar"
        with tarfile.open(archive) as tar:
            member = tar.extractfile("index.json")
            assert member is not None
            index = json.load(member)
        # containerd (k3s ctr images import) names the image from this annotation: the chart's reference with
        # global.imageSource=imported.
        assert index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] == \
            f"localhost/ragfr/{name}:{APP_VERSION}"
        check([*scratch_store, "load", "--quiet", "-i", str(archive)])
        loaded = check([*scratch_store, "image", "inspect", "--format", "{{.Id}}",
                        f"localhost/ragfr/{name}:{APP_VERSION}"]).strip()
        assert loaded == built[name]
    # Nothing is ever named under the docker.io/ragfr namespace this project does not own.
    listed = subprocess.run([*PODMAN, "images", "--format", "{{.Repository}}"], capture_output=True, text=True).stdout
    assert "docker.io/ragfr/" not in listed


@pytest.fixture()
def containerd() -> Iterator[list[str]]:
    """A private containerd (Debian 12's 1.6, what k3s embeds) with its own root, state and socket; the `ctr`
    command line that talks to it in k3s's namespace k8s.io. The CRI plugin is off: no kubelet here."""
    binary = shutil.which("containerd")
    assert binary, "containerd is not installed (make setup-apt installs it from bookworm)"
    # A unix socket path must stay under 108 bytes: pytest's tmp_path can be longer.
    root = Path(tempfile.mkdtemp(prefix="ragfr-ctd-"))
    (root / "config.toml").write_text(
        f'version = 2\nroot = "{root}/root"\nstate = "{root}/state"\n'
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
        f'[grpc]\n  address = "{root}/containerd.sock"\n')
    log = (root / "containerd.log").open("wb")
    proc = subprocess.Popen([binary, "--config", str(root / "config.toml")], stdout=log, stderr=subprocess.STDOUT)
    ctr = ["ctr", "--address", str(root / "containerd.sock"), "--namespace", "k8s.io"]
    deadline = time.monotonic() + 180  # a hang guard (see registry)
    while subprocess.run([*ctr, "version"], capture_output=True).returncode != 0:
        assert proc.poll() is None, (root / "containerd.log").read_text()[-2000:]
        assert time.monotonic() < deadline, "containerd did not answer in 180 s"
        time.sleep(0.2)
    yield ctr
    proc.terminate()
    proc.wait(timeout=30)
    log.close()
    subprocess.run(["umount", "--recursive", "--quiet", str(root / "state")], capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


def test_saved_archives_import_into_containerd_as_the_chart_names_them(saved: Path,
                                                                         containerd: list[str]) -> None:
    # What docs/install.md tells a k3s operator to run (`k3s ctr images import FILE`): k3s's ctr is containerd's.
    for name in NAMES:
        archive = saved / f"{name}-{APP_VERSION}.oci.tar"
        with tarfile.open(archive) as tar:
            member = tar.extractfile("index.json")
            assert member is not None
            digest = json.load(member)["manifests"][0]["digest"]
        out = subprocess.run([*containerd, "images", "import", str(archive)], capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, out.stderr[-1500:]
        listed = subprocess.run([*containerd, "images", "ls"], capture_output=True, text=True, check=True).stdout
        row = [line.split() for line in listed.splitlines() if line.startswith(f"localhost/ragfr/{name}:")]
        assert row and row[0][0] == f"localhost/ragfr/{name}:{APP_VERSION}" and row[0][2] == digest, listed
    # Unpacked and runnable by containerd's runtime, as the chart's default user (the image's, non-root).
    ran = subprocess.run([*containerd, "run", "--rm", f"localhost/ragfr/ragfr:{APP_VERSION}", "ragfr-ctd-check",
                          "sh", "-c", "ragfr --version && id -u"], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-1500:]
    version, uid = ran.stdout.split()[-2:]
    assert version == APP_VERSION and uid != "0", ran.stdout



def save_with(values: dict[str, object], out_dir: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`make images-save DIR=out VALUES=my-values.yaml` with the operator's values file."""
    import os

    my_values = tmp_path / "my-values.yaml"
    my_values.write_text(yaml.safe_dump(values))
    return subprocess.run(["bash", str(REPO / "scripts" / "images.sh"), "save", str(out_dir), str(my_values)],
                          capture_output=True, text=True, timeout=1200, env={**os.environ, "IMAGES_TLS_VERIFY": "false"})


def test_save_carries_the_upstream_images_the_release_names(built: dict[str, str], registry: str, tmp_path: Path,
                                                             scratch_store: list[str]) -> None:
    # Docker Hub and ghcr.io are out of reach here. The operator's values mirror the upstream images on a loopback
    # registry (global.imageRegistry, ragfr images imported), which holds a small image under each upstream name.
    upstream = {f"{registry}/open-webui/open-webui:v0.12.4", f"{registry}/ollama/ollama:0.12.10",
                f"{registry}/redis:7.4.2-alpine"}
    for name in upstream:
        check([*PODMAN, "push", "--quiet", "--tls-verify=false", f"localhost/ragfr/ragfr:{APP_VERSION}",
               f"docker://{name}"])
    out_dir = tmp_path / "out"
    done = save_with({"global": {"imageSource": "imported", "imageRegistry": registry}, "redis": {"enabled": True}},
                     out_dir, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    subprocess.run(["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=out_dir, check=True)
    files = {p.name for p in out_dir.glob("upstream-*.oci.tar")}
    assert files == {"upstream-open-webui-v0.12.4.oci.tar", "upstream-ollama-0.12.10.oci.tar",
                     "upstream-redis-7.4.2-alpine.oci.tar"}
    assert files <= set((out_dir / "SHA256SUMS").read_text().split())
    named = set()
    for file in files:
        with tarfile.open(out_dir / file) as tar:
            member = tar.extractfile("index.json")
            assert member is not None
            named.add(json.load(member)["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"])
        check([*scratch_store, "load", "--quiet", "-i", str(out_dir / file)])
    # Named as the chart renders them with these values, and the very image the registry served.
    assert named == upstream
    for name in upstream:
        loaded = check([*scratch_store, "image", "inspect", "--format", "{{.Id}}", name]).strip()
        assert loaded == built["ragfr"]
    # The local store is not where they came from, and is left as it was.
    listed = subprocess.run([*PODMAN, "images", "--format", "{{.Repository}}"], capture_output=True, text=True).stdout
    assert registry not in listed


def test_save_stops_on_an_upstream_image_it_cannot_pull(built: dict[str, str], tmp_path: Path) -> None:
    # The real upstream names: this machine reaches neither Docker Hub nor ghcr.io. One line naming the image and
    # the way out, before any archive is written.
    out_dir = tmp_path / "out"
    done = save_with({"global": {"imageSource": "imported"}}, out_dir, tmp_path)
    assert done.returncode == 4, done.stderr[-2000:]
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("images:")]
    assert re.match(r"images: cannot pull (docker\.io/ollama/ollama:0\.12\.10|ghcr\.io/open-webui/open-webui:v0\.12\.4) "
                    r"from this machine \(.+\): an air-gapped site needs it; run the save where it can be pulled, or "
                    r"IMAGES_UPSTREAM=0 for the ragfr images only$", line), line
    assert not list(out_dir.glob("*.oci.tar"))


@pytest.fixture()
def api() -> Iterator[str]:
    """The kubeconfig of a cluster that answers make run's reachability check and nothing else."""
    with version_only_api() as kubeconfig:
        yield kubeconfig


def test_make_run_with_a_registry_pushes_there_before_it_deploys(built: dict[str, str], registry: str,
                                                                  api: str, tmp_path: Path) -> None:
    # `make run VALUES=my-values.yaml` with global.imageRegistry: the images reach the registry first, then the
    # deploy runs. The cluster is a stand-in answering only the reachability check make run makes before it pushes
    # (tests/support/kube_api.py: no API server runs here), so the deploy fails at Helm's first real request.
    # RUN_BUILD=0 keeps the images `make images` built (a rebuild takes many minutes); what is tested is the push
    # and its order.
    import os

    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(api)
    my_values = tmp_path / "my-values.yaml"
    my_values.write_text(yaml.safe_dump({"global": {"imageRegistry": registry}}))
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "VALUES")}
    env.update(HOME=str(tmp_path), PATH="/usr/bin:/bin", KUBECONFIG=str(kubeconfig), RUN_BUILD="0",
               IMAGES_TLS_VERIFY="false")
    done = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "run", f"VALUES={my_values}"],
                          capture_output=True, text=True, timeout=1200, env=env)
    assert done.returncode != 0
    assert f"run: images: build here, push to {registry} (global.imageRegistry), then deploy" in done.stdout
    pushed = dict(line.split() for line in done.stdout.splitlines() if line.startswith(f"{registry}/"))
    assert set(pushed) == {f"{registry}/ragfr/{n}:{APP_VERSION}" for n in built}
    for name in built:
        assert registry_digest(registry, f"ragfr/{name}", APP_VERSION) == pushed[f"{registry}/ragfr/{name}:{APP_VERSION}"]
    assert done.stdout.index(f"{registry}/ragfr/") < done.stdout.index("bash scripts/deploy.sh")


def test_make_run_imported_on_a_k3s_node_imports_into_its_containerd(built: dict[str, str], containerd: list[str],
                                                                     api: str, tmp_path: Path) -> None:
    # A k3s server node: `k3s ctr` is containerd's ctr in namespace k8s.io. k3s cannot be installed here, so the
    # `k3s` on PATH is a two-line stand-in that hands `ctr ...` to the real ctr of a private containerd (the
    # containerd fixture): what is tested is that run imports every ragfr image under the name the chart renders,
    # into a real containerd, before it deploys (to the stand-in cluster above). RUN_BUILD=0: the images `make
    # images` built, as above.
    import os

    bindir = tmp_path / "bin"
    bindir.mkdir()
    k3s = bindir / "k3s"
    k3s.write_text('#!/bin/sh\n[ "$1" = ctr ] || exit 9\nshift\nexec ' + " ".join(containerd) + ' "$@"\n')
    k3s.chmod(0o755)
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(api)
    my_values = tmp_path / "my-values.yaml"
    my_values.write_text(yaml.safe_dump({"global": {"imageSource": "imported"}}))
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "VALUES")}
    env.update(HOME=str(tmp_path), PATH=f"{bindir}:/usr/bin:/bin", KUBECONFIG=str(kubeconfig), RUN_BUILD="0")
    done = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "run", f"VALUES={my_values}"],
                          capture_output=True, text=True, timeout=1200, env=env)
    assert done.returncode != 0
    assert "run: images: global.imageSource=imported on a k3s node: build here and import" in done.stdout
    listed = subprocess.run([*containerd, "images", "ls", "-q"], capture_output=True, text=True, check=True).stdout
    assert {f"localhost/ragfr/{n}:{APP_VERSION}" for n in built} <= set(listed.split()), listed
    assert "every other node that may run a ragfr pod needs the same import" in done.stdout
    assert done.stdout.index("every other node") < done.stdout.index("bash scripts/deploy.sh")


def test_save_keeps_upstream_images_pinned_by_digest(built: dict[str, str], registry: str, tmp_path: Path,
                                                      containerd: list[str]) -> None:
    # docs/install.md pins Open WebUI by its multi-arch index digest (TAG@sha256:...) and any image may be pinned
    # by a bare digest. The save must carry the very manifest pinned: podman's pull + push would recompress the
    # layers and the node would not find the digest the release names.
    # A name of this run's own: the podman store is the machine's, and another checkout's tests may be running.
    index = f"localhost/ragfr-test-pinned-index:{uuid.uuid4().hex[:12]}"
    check([*PODMAN, "manifest", "create", index])
    try:
        check([*PODMAN, "manifest", "add", index, f"containers-storage:localhost/ragfr/ragfr:{APP_VERSION}"])
        index_file = tmp_path / "index-digest"
        check([*PODMAN, "manifest", "push", "--all", "--quiet", "--tls-verify=false", "--digestfile",
               str(index_file), index, f"docker://{registry}/open-webui/open-webui:v0.12.4"])
    finally:
        subprocess.run([*PODMAN, "manifest", "rm", index], capture_output=True)
    single_file = tmp_path / "single-digest"
    check([*PODMAN, "push", "--quiet", "--tls-verify=false", "--digestfile", str(single_file),
           f"localhost/ragfr/ragfr:{APP_VERSION}", f"docker://{registry}/ollama/ollama:0.12.10"])
    owui_pin, ollama_pin = index_file.read_text().strip(), single_file.read_text().strip()
    values = {"global": {"imageSource": "imported", "imageRegistry": registry},
              "openwebui": {"image": {"tag": f"v0.12.4@{owui_pin}"}}, "ollama": {"image": {"tag": ollama_pin}}}
    out_dir = tmp_path / "out"
    done = save_with(values, out_dir, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    subprocess.run(["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=out_dir, check=True)
    expected = {f"upstream-open-webui-v0.12.4-sha256-{owui_pin[7:19]}.oci.tar": (f"{registry}/open-webui/open-webui",
                                                                                 owui_pin),
                f"upstream-ollama-sha256-{ollama_pin[7:19]}.oci.tar": (f"{registry}/ollama/ollama", ollama_pin)}
    assert {p.name for p in out_dir.glob("upstream-*.oci.tar")} == set(expected)
    assert set(expected) <= set((out_dir / "SHA256SUMS").read_text().split())
    rendered = {c for c in chart_images(values) if registry in c}
    assert rendered == {f"{registry}/open-webui/open-webui:v0.12.4@{owui_pin}", f"{registry}/ollama/ollama@{ollama_pin}"}
    for file, (_repo, pin) in expected.items():
        with tarfile.open(out_dir / file) as tar:
            member = tar.extractfile("index.json")
            assert member is not None
            top = json.load(member)["manifests"][0]
        assert top["digest"] == pin, file  # the index itself for Open WebUI, not one platform's manifest
        out = subprocess.run([*containerd, "images", "import", str(out_dir / file)], capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, out.stderr[-1500:]
    # Imported under REPO@DIGEST, the name containerd's CRI resolves a pinned reference to (it drops the tag).
    listed = subprocess.run([*containerd, "images", "ls"], capture_output=True, text=True, check=True).stdout
    rows = {line.split()[0]: line.split()[2] for line in listed.splitlines()[1:] if registry in line}
    assert rows == {f"{repo}@{pin}": pin for repo, pin in expected.values()}, listed


def chart_images(values: dict[str, object]) -> set[str]:
    refs = set()
    for doc in render(values):
        text = json.dumps(doc)
        refs.update(re.findall(r'"image": "([^"]+)"', text))
    return refs
