"""The owui-init image runs ragfr in a plain Debian python3: its build check (the Containerfile's `python3 -c`)
and its entrypoint (patches/open-webui/apply) import the patcher and the tokenizer with neither psycopg nor
numpy there (Open WebUI's own image has both; the init image installs only site-requirements.txt). A module
on that path that imports either fails the image build twenty minutes into `make test` (seen once:
ragfr.owui.runtime's __init__ importing ragfr.retrieval); this finds it in seconds, with the image's own
command."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.paths import REPO

CONTAINERFILE = REPO / "images" / "owui-init" / "Containerfile"
ABSENT = ("psycopg", "numpy")  # not in the init image: importing them there raises ImportError
BLOCK = f"import sys\nfor name in {ABSENT!r}:\n    sys.modules[name] = None\n"


def run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-c", BLOCK + code, *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=120)


def test_the_build_check_imports_without_psycopg_or_numpy() -> None:
    check = re.search(r"python3 -c '([^']+)'", CONTAINERFILE.read_text(encoding="utf-8"))
    assert check, f"{CONTAINERFILE} no longer holds its python3 -c import check"
    done = run(check.group(1))
    assert done.returncode == 0, done.stderr
    assert "owui-init: ragfr importable, patch" in done.stdout


def test_the_entrypoint_runs_without_psycopg_or_numpy() -> None:
    apply = REPO / "patches" / "open-webui" / "apply"
    done = run(f"import runpy, sys\nsys.argv = [{str(apply)!r}, '--help']\nrunpy.run_path({str(apply)!r}, "
               "run_name='__main__')")
    assert done.returncode == 0, done.stderr
    assert "--target" in done.stdout


def test_the_blocker_works() -> None:
    """The negative control: the same blocker makes an import of the vector arm fail."""
    done = run("import ragfr.retrieval")
    assert done.returncode != 0 and "halted; None in sys.modules" in done.stderr
