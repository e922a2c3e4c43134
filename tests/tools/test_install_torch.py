"""scripts/install-torch.sh: a CPU torch from PyTorch's index when it answers, else pip's default, never a failure
because the default source served the CUDA build.

A real CUDA torch (several GB from PyPI) cannot be installed here, so the CUDA case uses a stand-in: a tiny
wheel named torch 2.13.0 whose `torch.version.cuda` is "12.8", served from a local directory as pip's only
source. It stands for PyPI's Linux torch, and only the script's reaction to it is under test. The CPU-index
case serves the same kind of stand-in (cuda None) from a PEP 503 index on loopback.
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import threading
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.paths import REPO

ROOT = REPO
SCRIPT = ROOT / "scripts" / "install-torch.sh"


def fake_torch_wheel(directory: Path, local: str, cuda: str | None) -> Path:
    """A minimal torch wheel: `import torch` gives __version__ and version.cuda, nothing else."""
    directory.mkdir(parents=True, exist_ok=True)
    version = f"2.13.0{local}"
    wheel = directory / f"torch-{version}-py3-none-any.whl"
    dist = f"torch-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("torch/__init__.py", f"__version__ = {version!r}\nfrom torch import version\n")
        z.writestr("torch/version.py", f"cuda = {cuda!r}\n")
        z.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
        z.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist}/RECORD", "")
    return wheel


@pytest.fixture()
def venv_python(tmp_path: Path) -> Path:
    venv.create(tmp_path / "venv", with_pip=True)
    return tmp_path / "venv" / "bin" / "python"


def isolated_pip_env(**extra: str) -> dict[str, str]:
    """pip with no config files (this machine's pip.conf points at a local torch) and nothing else to reach."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


@pytest.fixture()
def cpu_index(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "index"
    wheel = fake_torch_wheel(root / "torch", "+cpu", None)
    (root / "torch" / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>\n')
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def run(python: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), str(python), "torch==2.13.0", "setup-test"],
                          capture_output=True, text=True, env=env, timeout=300)


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_cpu_index_used_when_it_answers(venv_python: Path, cpu_index: str, tmp_path: Path) -> None:
    # The default source holds the CUDA stand-in: taking it would mean the CPU index was ignored.
    fake_torch_wheel(tmp_path / "default", "", "12.8")
    env = isolated_pip_env(TORCH_CPU_INDEX=cpu_index, PIP_FIND_LINKS=str(tmp_path / "default"))
    env.pop("PIP_NO_INDEX")  # the script passes --index-url for the CPU index
    env["TORCH_EXTRA_INDEX"] = ""  # no PyPI: the stand-ins are the only torch
    done = run(venv_python, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == (
        f"setup-test: torch 2.13.0+cpu (CPU build) from PyTorch's CPU index {cpu_index}")


def test_unreachable_index_falls_back_quickly_and_accepts_cuda(venv_python: Path, tmp_path: Path) -> None:
    fake_torch_wheel(tmp_path / "default", "", "12.8")
    index = f"http://127.0.0.1:{closed_port()}/whl/cpu"
    done = run(venv_python, isolated_pip_env(TORCH_CPU_INDEX=index, PIP_FIND_LINKS=str(tmp_path / "default")))
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("setup-test: torch 2.13.0 is the CUDA build, from pip's default sources "
                           f"(PyTorch's CPU index {index} unusable: URLError"), last
    assert "still correct on the CPU" in last and "several GB bigger" in last
    # Seconds, not pip's retries: the reason above (URLError) is the one quick probe's, so pip never tried the
    # index; its failure would say "pip could not install". Not the wall clock around venv pip installs, which a
    # busy machine stretches (issue 37 item 9).
    assert "pip could not install" not in last


def test_setup_scripts_use_it_and_never_fail_on_cuda() -> None:
    for name in ("setup-owui.sh", "setup-venv.sh"):
        text = (ROOT / "scripts" / name).read_text()
        assert "install-torch.sh" in text, name
        assert "CUDA torch was installed" not in text, f"{name} still fails on a CUDA torch"


