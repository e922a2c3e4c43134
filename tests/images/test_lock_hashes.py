"""Every pip install in the images checks hashes (issue 25, "--require-hashes for every pip install in an image").

Static: every requirement of images/ragfr/requirements.lock and images/owui-init/site-requirements.txt is one
`name==version` with at least one --hash=sha256, and every `pip install` of the two Containerfiles passes
--require-hashes and --no-index (ragfr's own wheel, built at image build time, is hashed by build.sh). Live, with
this venv's pip and no image build: pip refuses a wheel whose digest is not the listed one ("THESE PACKAGES DO
NOT MATCH THE HASHES"), refuses a dependency the requirements do not list, and installs the same wheel when the
digest is right. The wheels are made here (tiny, pure Python), so no index is needed.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from tests.support.paths import REPO

LOCKS = (REPO / "images" / "ragfr" / "requirements.lock", REPO / "images" / "owui-init" / "site-requirements.txt")
CONTAINERFILES = (REPO / "images" / "ragfr" / "Containerfile", REPO / "images" / "owui-init" / "Containerfile")
PIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9._+!-]+")
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


def logical_lines(text: str) -> list[str]:
    """Non-comment lines, backslash continuations joined (as pip reads a requirements file)."""
    out, current = [], ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
        else:
            out.append(current + line)
            current = ""
    assert current == "", "the file ends in a continuation"
    return out


@pytest.mark.parametrize("path", LOCKS, ids=lambda p: p.name)
def test_every_requirement_is_pinned_with_a_hash(path: Path) -> None:
    lines = logical_lines(path.read_text(encoding="utf-8"))
    assert lines, f"{path}: no requirements"
    bad = []
    for line in lines:
        words = line.split()
        if not PIN.fullmatch(words[0]) or not words[1:] or not all(HASH.fullmatch(w) for w in words[1:]):
            bad.append(line)
    assert bad == [], f"{path}: not `name==version --hash=sha256:...`: {bad}"


def pip_installs(containerfile: Path) -> list[str]:
    """Each `pip install` command of the file's RUN instructions (continuations joined, split at && ; ||)."""
    text = re.sub(r"\\\n", " ", containerfile.read_text(encoding="utf-8"))
    commands = []
    for line in text.splitlines():
        if line.startswith("RUN "):
            commands += [c for c in re.split(r"&&|\|\||;", line) if re.search(r"\bpip3?\s+install\b", c)]
    return commands


@pytest.mark.parametrize("containerfile", CONTAINERFILES, ids=lambda p: p.parent.name)
def test_every_pip_install_requires_hashes_with_no_index(containerfile: Path) -> None:
    installs = pip_installs(containerfile)
    assert installs, f"{containerfile}: no pip install found (has the file changed shape?)"
    for command in installs:
        assert "--require-hashes" in command.split(), f"{containerfile}: no --require-hashes in: {command.strip()}"
        assert "--no-index" in command.split(), f"{containerfile}: pip may reach an index in: {command.strip()}"
        # What pip installs comes from a hashed requirements file, never from a name on the command line.
        assert re.search(r"\s-r\s+\S+", command), f"{containerfile}: not from a requirements file: {command.strip()}"


def test_ragfr_build_hashes_its_own_wheel() -> None:
    # ragfr's wheel is built from the checkout at image build time; build.sh writes its digest for the install.
    build = (REPO / "images" / "ragfr" / "build.sh").read_text(encoding="utf-8")
    assert re.search(r"ragfr==%s --hash=sha256:%s.*ragfr-wheel\.txt", build), "build.sh no longer hashes ragfr"
    assert "-r /tmp/ragfr-wheel.txt" in (REPO / "images" / "ragfr" / "Containerfile").read_text(encoding="utf-8")


# --- pip itself refuses -------------------------------------------------------------------------------------

def make_wheel(directory: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A minimal valid pure-Python wheel: one module and its dist-info (METADATA, WHEEL, RECORD)."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": f"VERSION = {version!r}\n",
        f"{dist}/METADATA": "Metadata-Version: 2.1\n" f"Name: {name}\nVersion: {version}\n"
                            + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: ragfr-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, body in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(body.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(body.encode())}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, body in files.items():
            z.writestr(path, body)
    return wheel


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pip_install(tmp_path: Path, wheels: Path, requirements: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """This venv's pip with the images' flags: no index, wheels from a folder, hashes required, into a target."""
    req = tmp_path / "requirements.txt"
    req.write_text(requirements)
    # PIP_CONFIG_FILE=/dev/null: this machine's pip.conf (extra find-links, constraints) plays no part.
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-cache-dir", "--no-index", "--find-links", str(wheels),
         "--require-hashes", "--no-compile", "--target", str(tmp_path / "site"), *extra, "-r", str(req)],
        capture_output=True, text=True, timeout=300, env=env, check=False)


def test_pip_refuses_a_wheel_whose_hash_is_not_the_listed_one(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    good = sha256(make_wheel(wheels, "ragfrprobe", "1.0"))
    wrong = f"{int(good[0], 16) ^ 1:x}{good[1:]}"  # one hex digit changed
    done = pip_install(tmp_path, wheels, f"ragfrprobe==1.0 --hash=sha256:{wrong}\n", "--no-deps")
    assert done.returncode != 0, done.stdout
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in done.stderr, done.stderr
    assert re.search(rf"Expected sha256 {wrong}\s+Got\s+{good}", done.stderr), done.stderr
    assert not (tmp_path / "site" / "ragfrprobe.py").exists()
    # The control: the same command with the wheel's real digest installs it.
    done = pip_install(tmp_path, wheels, f"ragfrprobe==1.0 --hash=sha256:{good}\n", "--no-deps")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "ragfrprobe.py").read_text() == "VERSION = '1.0'\n"


def test_pip_refuses_a_dependency_the_requirements_do_not_list(tmp_path: Path) -> None:
    # What `-r requirements.lock` without --no-deps relies on in the ragfr image: an unlisted dependency stops it.
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    app = make_wheel(wheels, "ragfrprobeapp", "1.0", requires=("ragfrprobedep==2.0",))
    make_wheel(wheels, "ragfrprobedep", "2.0")
    done = pip_install(tmp_path, wheels, f"ragfrprobeapp==1.0 --hash=sha256:{sha256(app)}\n")
    assert done.returncode != 0, done.stdout
    assert "ragfrprobedep" in done.stderr and "--require-hashes" in done.stderr, done.stderr
    assert not (tmp_path / "site" / "ragfrprobeapp.py").exists()
