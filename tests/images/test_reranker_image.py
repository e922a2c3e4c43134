"""ragfr/reranker (issue 29 item 3): the image `make images` builds from the trained French cross-encoder.

The trained weights take about an hour of this machine's two cores (`make reranker`) and cannot be fetched,
so CI builds the image from a STAND-IN model (tests/support/reranker_model.py: tiny random weights) through the
same build script, runs the chart's copy and offline load on it (`smoke.sh --plumbing-only`: random weights
cannot pass the smoke's French score check, which `make images` runs on the real model), and checks that
`images.sh save` and `list` carry it. The real model's image: `make reranker && make images` (docs/reranker.md).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.images.test_images import APP_VERSION, PODMAN, check, images_sh
from tests.support.chart import CHART, one, render
from tests.support.paths import REPO
from tests.support.reranker_model import stand_in_model

from ragfr_tools.reranker.package import REPO as MODEL_REPO

MINBASE = "localhost/ragfr-bookworm-minbase:1"
REF = f"localhost/ragfr/reranker:{APP_VERSION}"


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    model = tmp_path_factory.mktemp("reranker") / "model"
    commit = stand_in_model(model)
    tag = f"localhost/ragfr-reranker-test:{commit[:12]}"
    done = subprocess.run(["bash", str(REPO / "images" / "reranker" / "build.sh"), "--base", MINBASE,
                           "--model", str(model), "--tag", tag], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == tag
    yield tag, commit
    subprocess.run([*PODMAN, "rmi", "--force", tag], capture_output=True)


def test_the_chart_copies_and_loads_the_image_s_cache_offline(image: tuple[str, str]) -> None:
    tag, commit = image
    # The smoke runs the chart's own init command and script; check they are what the chart renders.
    values = yaml.safe_load((CHART / "examples" / "reranker-image.yaml").read_text())
    pod = one(render(values), "Deployment", "-openwebui")["spec"]["template"]["spec"]
    init = {c["name"]: c for c in pod["initContainers"]}
    assert init["copy-reranker-cache"]["command"] == ["cp", "-R", "/hf-cache/.", "/opt/hf-cache/"]
    # The images imported into the nodes (global.imageSource=imported, tests/support/chart.py): podman's name.
    assert init["copy-reranker-cache"]["image"] == f"localhost/ragfr/reranker:{APP_VERSION}"
    env = {e["name"]: e.get("value") for e in init["cache-reranker"]["env"]}
    assert env["RAG_RERANKING_MODEL"] == MODEL_REPO and env["RERANKER_SOURCE"] == "image"
    out = check(["bash", str(REPO / "images" / "reranker" / "smoke.sh"), "--plumbing-only", tag])
    assert f"reranker-cache: {MODEL_REPO} loads offline from " in out and f"(commit {commit})" in out
    assert f"smoke: reranker image {tag} plumbing OK" in out


def test_a_model_that_is_not_trained_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(REPO / "images" / "reranker" / "build.sh"), "--model", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 3
    assert done.stderr.strip() == (f"reranker build: no trained model at {tmp_path} (make reranker trains it, "
                                   "about 70 min on 2 cores)")


@pytest.fixture()
def tagged(image: tuple[str, str]) -> Iterator[str]:
    """The stand-in image under the reference `make images` gives the real one; a real one is put back after."""
    before = subprocess.run([*PODMAN, "image", "inspect", "--format", "{{.Id}}", REF], capture_output=True, text=True)
    check([*PODMAN, "tag", image[0], REF])
    yield REF
    if before.returncode == 0:
        check([*PODMAN, "tag", before.stdout.strip(), REF])
    else:
        check([*PODMAN, "untag", REF, REF])


def test_save_and_list_carry_the_reranker_when_it_is_built(tagged: str, tmp_path: Path) -> None:
    assert images_sh("list").split()[-1] == tagged
    # The ragfr images only: the upstream ones cannot be pulled here (tests/images/test_images.py saves them
    # from a loopback registry), and this test is about the reranker archive.
    images_sh("save", str(tmp_path / "out"), env={"IMAGES_UPSTREAM": "0"})
    sums = (tmp_path / "out" / "SHA256SUMS").read_text()
    assert f"reranker-{APP_VERSION}.oci.tar" in sums
    subprocess.run(["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=tmp_path / "out", check=True)
