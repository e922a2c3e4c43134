"""The images the cluster smoke runs in place of the two the chart names but this machine cannot pull.

Each is built once per input (its tag carries a hash of what went in) on the project's Debian 12 minbase, with
no registry: the stock Open WebUI image is rebuilt from the open-webui 0.12.4 wheel and the dependencies already
installed in .venv-owui; Ollama is replaced by the project's Ollama-API TEST DOUBLE.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
import zipfile
from pathlib import Path

from ragfr_tools.kubesim.runner import PODMAN, SmokeFailure
from ragfr_tools.repo import REPO

OPENWEBUI_WHEEL = "open-webui==0.12.4"
MINBASE = "localhost/ragfr-bookworm-minbase:1"
OWUI_SITE = REPO / ".venv-owui" / "lib" / "python3.11" / "site-packages"
# Debian's python3 looks here for locally installed packages (the stock image's /usr/local/lib/python3.11/
# site-packages is the python:3.11 image's equivalent).
DEPS_DIR = "/usr/local/lib/python3.11/dist-packages"
# What .venv-owui holds that the stock image does not have on its path: Open WebUI itself lives at
# /app/backend/open_webui there, and pip/setuptools are the venv's own.
NOT_DEPS = "open_webui open_webui-*.dist-info pip pip-*.dist-info setuptools setuptools-*.dist-info " \
           "_distutils_hack distutils-precedence.pth"
# The stock image's start.sh ends with this command; its other branches (generating WEBUI_SECRET_KEY into a file,
# CUDA, bundled Ollama, Playwright) are not taken by the chart, which sets WEBUI_SECRET_KEY from a Secret.
START_SH = """#!/usr/bin/env bash
# ragfr cluster-smoke stand-in for the stock image's start.sh: its final command only.
cd "$(dirname "$0")" || exit 1
exec python -m uvicorn open_webui.main:app --host "${HOST:-0.0.0.0}" --port "${PORT:-8080}" \\
  --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-*}" --workers "${UVICORN_WORKERS:-1}"
"""


def _podman(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout)


def _exists(tag: str) -> bool:
    return _podman("image", "exists", tag).returncode == 0


def _build(tag: str, ctx: Path, what: str, *extra: str) -> str:
    done = _podman("build", "-q", "--network", "host", *extra, "-t", tag, str(ctx))
    if done.returncode != 0:
        raise SmokeFailure(f"building {what} failed: {done.stderr[-800:]}")
    return tag


def _require_minbase() -> None:
    if not _exists(MINBASE):
        raise SmokeFailure(f"{MINBASE} is missing: `make images` (scripts/build-image.sh --local-base) makes it")


WHEELS = REPO / ".build" / "kubesim" / "wheels"
# .venv-owui's CPython is newer than Debian 12's 3.11.2, for which redis needs async-timeout
# (`async-timeout>=4.0.3; python_full_version < '3.11.3'`): pip skipped it there.
DEBIAN_PYTHON_EXTRA = "async-timeout==5.0.1"


def wheel(requirement: str) -> Path:
    """The wheel of a pinned requirement, downloaded once (pip's cache makes it a copy after the first time)."""
    name, version = requirement.split("==")
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    found = sorted(WHEELS.glob(pattern))
    if not found:
        WHEELS.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(REPO / ".venv" / "bin" / "pip"), "download", "-q", "--no-deps", "--only-binary=:all:",
                        "-d", str(WHEELS), requirement], check=True, capture_output=True, timeout=600)
        found = sorted(WHEELS.glob(pattern))
    return found[0]


def openwebui_wheel() -> Path:
    return wheel(OPENWEBUI_WHEEL)


def openwebui_deps_image() -> str:
    """Debian's CPython 3.11 with Open WebUI 0.12.4's dependencies, as installed in .venv-owui (the project's
    Open WebUI venv, scripts/setup-owui.sh), plus curl (the stock image has it; the readiness probe uses it)."""
    if not OWUI_SITE.is_dir():
        raise SmokeFailure(f"{OWUI_SITE} is missing: `bash scripts/setup-owui.sh` (make owui-venv) makes it")
    freeze = subprocess.run([str(REPO / ".venv-owui" / "bin" / "python"), "-m", "pip", "freeze", "--all"],
                            check=True, capture_output=True, text=True, timeout=120).stdout
    extra = wheel(DEBIAN_PYTHON_EXTRA)
    key = hashlib.sha256(f"{freeze}\0{NOT_DEPS}\0{extra.name}\0python3 curl".encode()).hexdigest()[:12]
    tag = f"localhost/ragfr-smoke/open-webui-deps:{key}"
    if _exists(tag):
        return tag
    _require_minbase()
    with tempfile.TemporaryDirectory(prefix="ragfr-owui-deps-") as tmp:
        ctx = Path(tmp)
        (ctx / "Containerfile").write_text(
            f"FROM {MINBASE}\n"
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
            "-t bookworm python3 python-is-python3 curl ca-certificates && rm -rf /var/lib/apt/lists/*\n"
            # A bind mount at build time, not a COPY: 2.6 GB never pass through a build context.
            f"RUN mkdir -p {DEPS_DIR} && cp -a /owui-site/. {DEPS_DIR}/ && cd {DEPS_DIR} && rm -rf {NOT_DEPS} "
            f"&& python3 -m zipfile -e /wheels/{extra.name} . && chmod -R a+rX .\n")
        return _build(tag, ctx, "the Open WebUI dependencies image", "--volume", f"{OWUI_SITE}:/owui-site:ro",
                      "--volume", f"{WHEELS}:/wheels:ro")


def openwebui_image(*, modify: str = "") -> str:
    """The stand-in for the stock Open WebUI image, with its layout: the wheel's open_webui package at
    /app/backend/open_webui, the built frontend at /app/build, `bash start.sh` in /app/backend as CMD.

    modify: a file under open_webui/ to append a comment to (a "locally modified" stock image, which the
    French patch must refuse).
    """
    deps = openwebui_deps_image()
    wheel = openwebui_wheel()
    key = hashlib.sha256(f"{deps} {wheel.name} {wheel.stat().st_size} {modify} {START_SH}".encode()).hexdigest()[:12]
    tag = f"localhost/ragfr-smoke/open-webui:{key}"
    if _exists(tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="ragfr-owui-layout-") as tmp:
        ctx = Path(tmp)
        backend = ctx / "app" / "backend"
        with zipfile.ZipFile(wheel) as z:
            z.extractall(backend, [n for n in z.namelist() if n.startswith("open_webui/")])
        (backend / "open_webui" / "frontend").rename(ctx / "app" / "build")
        (backend / "start.sh").write_text(START_SH)
        if modify:
            with (backend / modify).open("a") as f:
                f.write("# local edit (cluster smoke: a modified stock image)\n")
        (ctx / "Containerfile").write_text(
            f"FROM {deps}\n"
            "COPY app /app\nRUN chmod -R a+rX /app\n"
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ENV=prod PORT=8080\n"
            "WORKDIR /app/backend\n"
            'CMD ["bash", "start.sh"]\n')
        return _build(tag, ctx, "the Open WebUI stand-in image")


def ollama_double_image(embedding_model: str) -> str:
    """The Ollama-API test double, answering to `embedding_model` for embeddings and holding the models of the
    store at $OLLAMA_MODELS; returns its reference."""
    def digest(*roots: Path) -> str:
        h = hashlib.sha256(embedding_model.encode())
        for root in roots:
            for f in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
                h.update(f"{f.relative_to(REPO)}\0".encode() + f.read_bytes())
        return h.hexdigest()[:12]

    key = digest(REPO / "src", REPO / "tools" / "ragfr_tools", REPO / "migrations")
    tag = f"localhost/ragfr-smoke/ollama-double:{key}"
    if _exists(tag):
        return tag
    _require_minbase()
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
            # The model store is the rendered OLLAMA_MODELS (in the chart's model volume), read as Ollama reads
            # it: the double holds exactly the models copied there.
            'ENTRYPOINT ["sh", "-c", "exec python -m ragfr_tools.devserver --host 0.0.0.0 --port 11434 '
            f'--embedding-model-name {embedding_model} --models-dir \\"$OLLAMA_MODELS\\""]\n')
        return _build(tag, ctx, "the Ollama test double image")
