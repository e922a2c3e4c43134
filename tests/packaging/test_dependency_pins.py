"""The pins that reach the images agree with pyproject.toml: images/ragfr/requirements.lock pins every runtime
dependency of ragfr (and its `k8s` extra) inside the declared range; images/owui-init/site-requirements.txt pins
the same versions as the lock; and the modules Open WebUI loads import with nothing but Open WebUI's own
packages plus that site (as /opt/ragfr/site in the pod), so a new dependency cannot be forgotten there."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from tests.support.paths import REPO

from ragfr_tools.build.lockhash import read_pins

LOCK = REPO / "images" / "ragfr" / "requirements.lock"
SITE = REPO / "images" / "owui-init" / "site-requirements.txt"
# What the patched Open WebUI imports (patches/open-webui: bodies and replacements, the readiness check).
OWUI_IMPORTS = ("ragfr.owui.runtime.native", "ragfr.owui.runtime.chat_gate", "ragfr.owui.runtime.vectors", "ragfr.owui.runtime.tokenize",
                "ragfr.owui.patcher.check", "ragfr.metrics")


def _pins(path: Path) -> dict[str, str]:
    # read_pins refuses anything but `name==version` with --hash options (tests/images/test_lock_hashes.py).
    return {canonicalize_name(pin.name): pin.version for pin in read_pins(path)}


def _runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["k8s"]]


def test_the_lock_pins_every_runtime_dependency_inside_its_range() -> None:
    lock = _pins(LOCK)
    problems = []
    for req in _runtime_requirements():
        version = lock.get(canonicalize_name(req.name))
        if version is None or version not in req.specifier:
            problems.append(f"{req} -> {version}")
    assert problems == [], f"images/ragfr/requirements.lock does not satisfy pyproject.toml: {problems}"


def test_the_owui_site_pins_what_the_lock_pins() -> None:
    lock, site = _pins(LOCK), _pins(SITE)
    assert {n: v for n, v in site.items() if lock.get(n) not in (None, v)} == {}
    assert "prometheus-client" in site  # ragfr.metrics is imported by the search and the gate inside Open WebUI


def test_what_open_webui_loads_imports_from_its_own_packages_and_the_site(late_setup: None) -> None:
    from tests.owui.conftest import OWUI_PYTHON, RAGFR_SITE, require_owui_venv

    require_owui_venv()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": f"{REPO / 'src'}:{RAGFR_SITE}"}
    done = subprocess.run([str(OWUI_PYTHON), "-c", "import " + ", ".join(OWUI_IMPORTS)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
