"""The files docs/install.md and the runbooks have the operator write in the checkout (my-values.yaml, the admin
Secret's two files, the image archives, the calibration's output, a TLS key, ...) are ignored by git: they are the
operator's, some of them secret, and `git status` / `git add` in the checkout must not offer them
(newcomer walk 0.2.0, item 4)."""

from __future__ import annotations

import re
import shlex
import subprocess

from tests.docs.test_install_walk import fenced, shell_lines
from tests.support.paths import REPO

PAGES = (REPO / "docs" / "install.md", *sorted((REPO / "docs" / "runbooks").glob("*.md")))
# How a command of the pages names a file it writes in the directory it runs in (the checkout).
WRITES = (
    re.compile(r"(?<![0-9&])>\s*\"?([\w.$-]+)\"?"),         # > file (not 2>&1, not a pipe into a path)
    re.compile(r"\b(?:DIR|MODELS_DIR)=([\w.$-]+)"),          # make images-save DIR=ragfr-images
    re.compile(r"--(?:out|calibration-json)[ =]([\w.$-]+)"),  # ragfr gate calibrate --out gate-values.yaml
    re.compile(r"--(?:cert|key)=([\w.$-]+)"),                 # kubectl create secret tls --cert=chat.crt
    re.compile(r"\s-(?:out|keyout)\s+([\w.$-]+)"),            # openssl req -keyout ca.key -out ca.crt
)


def bare(cmd: str) -> str:
    """The command without its comment, quoted strings and <placeholders>, whose > are no redirections."""
    cmd = re.sub(r"\s#\s.*$", "", cmd)
    cmd = re.sub(r"'[^']*'", "''", cmd)
    return re.sub(r"<[^<>]*>", "PLACEHOLDER", cmd)


def written_files() -> dict[str, str]:
    """Relative file name -> where a page writes it (cp's target too), for names that stay in the checkout."""
    out: dict[str, str] = {}
    for page in PAGES:
        for lang, start, body in fenced(page):
            if lang != "sh":
                continue
            for line, cmd in shell_lines(body.splitlines(), start + 1):
                found: list[str] = []
                for pattern in WRITES:
                    found += pattern.findall(bare(cmd))
                if cmd.startswith("cp "):
                    found.append(shlex.split(cmd)[-1])
                for name in found:
                    if name.startswith("$"):  # MODELS_DIR=$PWD/ol/models: a path the variable names, anywhere
                        continue
                    # A variable's value is the operator's choice; the walk's own is the part before it.
                    name = re.sub(r"\$\{?\w+\}?.*$", "x", name)
                    if "/" in name or name.startswith(("~", "$", ".")) or not name:
                        continue
                    out.setdefault(name, f"{page.relative_to(REPO)}:{line}: {cmd[:90]}")
    return out


def test_the_walk_writes_files_in_the_checkout() -> None:
    # Not vacuous: the guide's own files are found.
    files = set(written_files())
    assert {"my-values.yaml", "admin-email", "admin-password"} <= files
    assert any(n.startswith("ragfr-images-") for n in files), sorted(files)


def test_every_file_the_walk_writes_in_the_checkout_is_ignored() -> None:
    files = written_files()
    tracked = set(subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                                 check=True).stdout.split())
    # A directory the walk fills (DIR=ragfr-images-0.2.1, a name with dots) is checked with a file inside it, as
    # git sees the archives.
    probes = {name: f"{name}/probe.oci.tar" if "." not in name or "DIR=" in files[name] else name for name in files}
    done = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-v", "-n"], cwd=REPO,
                          input="\n".join(probes.values()) + "\n", capture_output=True, text=True)
    ignored = {line.split("\t", 1)[1] for line in done.stdout.splitlines()
               if "\t" in line and not line.startswith("::")}
    missing = [f"{files[n]} -> {n}" for n, probe in probes.items() if probe not in ignored and n not in tracked]
    assert not missing, "files the docs write into the checkout that .gitignore does not list:\n" + "\n".join(missing)
