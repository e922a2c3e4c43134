"""The ragdb image: built with podman from images/ragdb/Containerfile on a Debian 12 base made here with
debootstrap (no registry is reachable), then smoke-tested inside, natively and on an emulated CPU without
AVX-512. Skipped, saying why, only when podman or debootstrap cannot run on the machine."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ragfr_tools.build.avx512_scan import load_allowlist, scan_file
from ragfr_tools.build.flavors import FlavorBuild
from ragfr_tools.build.pgcluster import REPO

pytestmark = pytest.mark.slow
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file"]


def _unavailable() -> str | None:
    for tool in ("podman", "debootstrap", "qemu-x86_64"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (make setup-apt installs it)"
    info = subprocess.run([*PODMAN, "info"], capture_output=True, text=True, check=False)
    if info.returncode != 0:
        return f"podman cannot run here: {info.stderr.strip().splitlines()[-1:]}"
    return None


@pytest.fixture(scope="module")
def image(late_setup: None) -> str:
    # late_setup: under `make test`, the late setup's images.sh runs build-image.sh meanwhile, in the same
    # .build/image-context and debootstrap root; once it is done, this build reuses its image (same inputs).
    reason = _unavailable()
    if reason:
        pytest.skip(reason)
    proc = subprocess.run(
        ["bash", str(REPO / "scripts/build-image.sh"), "--local-base"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def _smoke(tag: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(REPO / "scripts/image-smoke.sh"), tag, *extra], capture_output=True, text=True, check=False
    )


def test_image_smoke(image: str) -> None:
    proc = _smoke(image)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ragdb smoke: OK"), proc.stdout + proc.stderr


def test_image_smoke_on_cpu_without_avx512(image: str) -> None:
    proc = _smoke(image, "--old-cpu")
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ragdb smoke: OK"), proc.stdout + proc.stderr


def test_image_vector_so_has_avx512_only_in_allowlisted_functions(image: str, tmp_path: Path) -> None:
    so = tmp_path / "vector.so"
    with so.open("wb") as out:
        subprocess.run(
            [*PODMAN, "run", "--rm", "--network", "none", "--ulimit", "nofile=20000:20000", "--ulimit",
             "nproc=4096:4096", "--entrypoint", "cat", image,
             "/usr/lib/postgresql/15/lib/vector.so"],
            stdout=out, check=True,
        )
    report = scan_file(so, load_allowlist(REPO / "images/ragdb/avx512-allowlist.txt"))
    assert report.offending == [] and report.allowed, report.summary()


def test_negative_control_native_vector_so_dies_in_the_image_on_old_cpu(
    image: str, flavor: Callable[[str], FlavorBuild]
) -> None:
    """The same smoke, with the negative control's vector.so (upstream's -march=native; an explicit AVX-512
    target on a host without it) mounted over the image's, must fail with SIGILL."""
    proc = _smoke(image, "--old-cpu", "--vector-so", str(flavor("native").vector_so))
    assert proc.returncode == 132, proc.stdout + proc.stderr
    assert "SIGILL" in proc.stderr
