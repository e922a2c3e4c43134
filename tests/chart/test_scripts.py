"""The chart's scripts (charts/ragfr/files) run for real here: against the private PostgreSQL with our
pgvector build, the real ragfr CLI, the real patcher and the real open-webui 0.12.4 files. What stays
cluster-only is the wiring between pods, which the render tests cover."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from tests.support.chart import CHART
from tests.support.paths import REPO
from tests.support.standins import tiny_cross_encoder, tiny_cross_encoder_cache

FILES = CHART / "files"
# Every file the patch manifest edits (the chart's openwebui.patch.files must list the same).
PATCH_FILES = tuple(f["path"] for f in json.loads((REPO / "patches" / "open-webui" / "manifest.json").read_text())["files"])
VENV_BIN = Path(sys.executable).parent


def run(cmd: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def initialised_ragdb(pg_dsn: str) -> Iterator[dict[str, str]]:
    """ragdb-init.sh run as the image entrypoint would, on fresh role/database names; dropped afterwards."""
    url = urlsplit(pg_dsn)
    suffix = secrets.token_hex(4)
    env = {
        "PGHOST": url.hostname or "127.0.0.1", "PGPORT": str(url.port or 5432), "PGPASSWORD": url.password or "",
        "POSTGRES_USER": url.username or "postgres",
        "RAGFR_DB": f"ragfr_it_{suffix}", "RAGFR_USER": f"ragfr_it_{suffix}", "RAGFR_PASSWORD": secrets.token_hex(16),
        "OPENWEBUI_DB": f"owui_it_{suffix}", "OPENWEBUI_USER": f"owui_it_{suffix}",
        "OPENWEBUI_PASSWORD": secrets.token_hex(16),
    }
    done = run(["sh", str(FILES / "ragdb-init.sh")], env)
    try:
        assert done.returncode == 0, done.stderr
        yield env
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            for db in (env["RAGFR_DB"], env["OPENWEBUI_DB"]):
                conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            for role in (env["RAGFR_USER"], env["OPENWEBUI_USER"]):
                conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_ragdb_init_lets_the_unprivileged_owner_migrate(initialised_ragdb: dict[str, str]) -> None:
    env = initialised_ragdb
    owner = {"PGUSER": env["RAGFR_USER"], "PGPASSWORD": env["RAGFR_PASSWORD"], "PGDATABASE": env["RAGFR_DB"]}
    with psycopg.connect(f"host={env['PGHOST']} port={env['PGPORT']} dbname={env['RAGFR_DB']} "
                         f"user={env['RAGFR_USER']} password={env['RAGFR_PASSWORD']}") as conn:
        assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (False,)
        exts = {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
        assert {"vector", "unaccent"} <= exts

    waited = run(["sh", str(FILES / "wait-for-postgres.sh")], {**env, **owner, "WAIT_TIMEOUT_SECONDS": "20"})
    assert waited.returncode == 0 and "is up" in waited.stdout, waited.stderr

    dsn = (f"postgresql://{env['RAGFR_USER']}:{env['RAGFR_PASSWORD']}@{env['PGHOST']}:{env['PGPORT']}/"
           f"{env['RAGFR_DB']}?sslmode=disable")
    ragfr = str(VENV_BIN / "ragfr")
    early = run([ragfr, "migrate", "--dsn", dsn, "--wait", "--timeout", "3"], {})
    assert early.returncode != 0, "the schema wait passed before any migration ran"
    migrated = run([ragfr, "migrate", "--dsn", dsn, "--dims", "1024", "--embedding-model", "ollama:bge-m3"], {})
    assert migrated.returncode == 0, migrated.stderr
    waited = run([ragfr, "migrate", "--dsn", dsn, "--wait", "--timeout", "10"], {})
    assert waited.returncode == 0, waited.stderr

    checked = run([sys.executable, str(FILES / "helm-test.py"), "schema"],
                  {"DATABASE_URL": dsn, "EMBEDDING_DIMS": "1024", "OPENWEBUI_URL": "http://unused"})
    assert checked.returncode == 0 and checked.stdout.startswith("PASS schema"), checked.stdout + checked.stderr
    french = run([sys.executable, str(FILES / "helm-test.py"), "french"],
                 {"DATABASE_URL": dsn, "EMBEDDING_DIMS": "1024", "OPENWEBUI_URL": "http://unused",
                  "FRENCH_QUERY": "ecole publique",
                  "FRENCH_DOCUMENT": "Les écoles publiques de la ville accueillent les élèves."})
    assert french.returncode == 0 and french.stdout.startswith("PASS french"), french.stdout + french.stderr
    with psycopg.connect(dsn) as conn:  # the check's chunk was rolled back
        assert conn.execute("SELECT count(*) FROM document_chunk").fetchone() == (0,)
    unrelated = run([sys.executable, str(FILES / "helm-test.py"), "french"],
                    {"DATABASE_URL": dsn, "EMBEDDING_DIMS": "1024", "OPENWEBUI_URL": "http://unused",
                     "FRENCH_QUERY": "assurance habitation", "FRENCH_DOCUMENT": "Les écoles publiques."})
    assert unrelated.returncode == 1 and "FAIL french" in unrelated.stdout, unrelated.stdout
    wrong = run([sys.executable, str(FILES / "helm-test.py"), "schema"],
                {"DATABASE_URL": dsn, "EMBEDDING_DIMS": "768", "OPENWEBUI_URL": "http://unused"})
    assert wrong.returncode == 1 and "FAIL schema" in wrong.stdout and "expected 768 dims" in wrong.stdout


def test_wait_for_postgres_gives_up_with_one_clear_line() -> None:
    env = {"PGHOST": "127.0.0.1", "PGPORT": "1", "PGUSER": "ragfr", "PGDATABASE": "ragfr", "PGPASSWORD": "x",
           "PGCONNECT_TIMEOUT": "1", "WAIT_TIMEOUT_SECONDS": "2"}
    done = run(["sh", str(FILES / "wait-for-postgres.sh")], env)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == "wait-for-postgres: ragfr@127.0.0.1:1/ragfr not usable after 2s:"


@pytest.fixture
def stock_tree(tmp_path: Path, late_setup: None) -> Path:
    """The files the patch touches, copied from the real open-webui 0.12.4 package."""
    # Looked up here, not at import: under `make test` .venv-owui may still be building when this file is collected.
    owui_site = next((REPO / ".venv-owui" / "lib").glob("python3*/site-packages"), None)
    if owui_site is None or not (owui_site / "open_webui").is_dir():
        pytest.fail("open-webui 0.12.4 is not installed in .venv-owui (make setup installs it)")
    target = tmp_path / "patched"
    for rel in PATCH_FILES:
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(owui_site / rel, target / rel)
    return target


def _apply(target: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site-src"
    (site / "ragfr").mkdir(parents=True, exist_ok=True)
    (site / "ragfr" / "__init__.py").write_text("")
    env = {
        "PATCH_TARGET": str(target),
        "PATCH_FILES": " ".join(PATCH_FILES),
        "PATCH_APPLY": f"{sys.executable} {REPO / 'patches' / 'open-webui' / 'apply'}",
        "OPENWEBUI_VERSION": "v0.12.4", "SITE_SOURCE": str(site), "SITE_TARGET": str(tmp_path / "site"),
    }
    return run([sys.executable, str(FILES / "apply-patch.py")], env)


@pytest.mark.owui
def test_apply_patch_patches_the_stock_files_and_writes_the_marker(stock_tree: Path, tmp_path: Path) -> None:
    done = _apply(stock_tree, tmp_path)
    assert done.returncode == 0, done.stderr
    marker = json.loads((stock_tree / "open_webui" / "static" / "ragfr-patch.json").read_text())
    assert marker["openwebui_version"] == "v0.12.4"
    for rel, hashes in marker["files"].items():
        assert hashes["pristine_sha256"] != hashes["patched_sha256"], rel
        assert "ragfr" in (stock_tree / rel).read_text(), rel
    assert (tmp_path / "site" / "ragfr" / "__init__.py").exists()


@pytest.mark.owui
def test_apply_patch_fails_the_pod_when_the_patcher_refuses(stock_tree: Path, tmp_path: Path) -> None:
    utils = stock_tree / "open_webui" / "retrieval" / "utils.py"
    utils.write_text(utils.read_text() + "\n# locally modified\n")
    done = _apply(stock_tree, tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("apply-patch: the patcher refused (exit 2)")
    assert not (stock_tree / "open_webui" / "static" / "ragfr-patch.json").exists()


def test_reranker_cache_fails_the_pod_when_the_model_is_not_cached(tmp_path: Path) -> None:
    env = {"RERANKER_SOURCE": "pvc", "RAG_RERANKING_MODEL": "cross-encoder/ms-marco-MiniLM-L-6-v2",
           "SENTENCE_TRANSFORMERS_HOME": str(tmp_path), "HF_HOME": str(tmp_path)}
    done = run([sys.executable, str(FILES / "reranker-cache.py")], env)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        f"reranker-cache: cannot load cross-encoder/ms-marco-MiniLM-L-6-v2 offline from {tmp_path}: "
    ), line


def test_reranker_cache_accepts_a_pre_filled_cache_offline(tmp_path: Path) -> None:
    repo = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    tiny_cross_encoder_cache(tmp_path, repo)
    env = {"RERANKER_SOURCE": "pvc", "RAG_RERANKING_MODEL": repo,
           "SENTENCE_TRANSFORMERS_HOME": str(tmp_path), "HF_HOME": str(tmp_path / "elsewhere")}
    done = run([sys.executable, str(FILES / "reranker-cache.py")], env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"reranker-cache: {repo} loads offline from {tmp_path} (commit {'0' * 40})"


# Issue 25 item 5 (Low): the reranker download is pinned to a commit. No Hugging Face here: a shim package
# first on PYTHONPATH loads the real huggingface_hub and replaces only its snapshot_download for DOWNLOADS
# (recording the call, then writing a tiny stand-in model where the Hub would put that commit: snapshots/<sha>,
# and no refs/main, as the real library does for a commit); offline resolution stays the real library's.
HUB_SHIM = """
import importlib.machinery, importlib.util, json, os, shutil, sys
_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.machinery.PathFinder.find_spec(
    "huggingface_hub", [p for p in sys.path if os.path.abspath(p or ".") != _here])
_real = importlib.util.module_from_spec(_spec)
sys.modules["huggingface_hub"] = _real
_spec.loader.exec_module(_real)
_offline = _real.snapshot_download

def snapshot_download(**kw):
    if kw.get("local_files_only"):
        return _offline(**kw)
    with open(os.environ["SHIM_CALLS"], "a") as f:
        f.write(json.dumps(kw) + "\\n")
    dest = os.path.join(kw["cache_dir"], "models--" + kw["repo_id"].replace("/", "--"), "snapshots", kw["revision"])
    shutil.copytree(os.environ["SHIM_MODEL"], dest, dirs_exist_ok=True)
    return dest

_real.snapshot_download = snapshot_download
"""
SHA = "c5ee24cb16019beea0893ab7796b1df96625c6b8"


def _download_env(tmp_path: Path, revision: str) -> tuple[dict[str, str], Path]:
    shim = tmp_path / "shim" / "huggingface_hub"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(HUB_SHIM)
    model = tiny_cross_encoder(tmp_path / "model", words=("ecole", "publique"))
    calls = tmp_path / "calls.jsonl"
    cache = tmp_path / "cache"
    env = {"RERANKER_SOURCE": "download", "RERANKER_REVISION": revision,
           "RAG_RERANKING_MODEL": "cross-encoder/ms-marco-MiniLM-L-6-v2", "SENTENCE_TRANSFORMERS_HOME": str(cache),
           "HF_HOME": str(cache), "PYTHONPATH": os.pathsep.join([str(shim.parent), os.environ.get("PYTHONPATH", "")]),
           "SHIM_CALLS": str(calls), "SHIM_MODEL": str(model)}
    return env, calls


def test_reranker_download_fetches_the_pinned_commit_and_points_main_at_it(tmp_path: Path) -> None:
    env, calls = _download_env(tmp_path, SHA)
    cache = Path(env["SENTENCE_TRANSFORMERS_HOME"])
    # A cache from an earlier, unpinned release: refs/main at another commit. The pinned one must win.
    tiny_cross_encoder_cache(cache, "cross-encoder/ms-marco-MiniLM-L-6-v2")
    done = run([sys.executable, str(FILES / "reranker-cache.py")], env)
    assert done.returncode == 0, done.stderr[-2000:]
    (call,) = [json.loads(line) for line in calls.read_text().splitlines()]
    assert call == {"repo_id": "cross-encoder/ms-marco-MiniLM-L-6-v2", "cache_dir": str(cache), "revision": SHA}
    ref = cache / "models--cross-encoder--ms-marco-MiniLM-L-6-v2" / "refs" / "main"
    assert ref.read_text() == SHA
    assert done.stdout.strip() == (
        f"reranker-cache: cross-encoder/ms-marco-MiniLM-L-6-v2 loads offline from {cache} (commit {SHA})")


def test_reranker_download_is_not_repeated_when_the_cache_holds_the_pinned_commit(tmp_path: Path) -> None:
    """openwebui.reranker.cache: the second start (same volume) loads the pinned commit without downloading."""
    env, calls = _download_env(tmp_path, SHA)
    cache = Path(env["SENTENCE_TRANSFORMERS_HOME"])
    first = run([sys.executable, str(FILES / "reranker-cache.py")], env)
    assert first.returncode == 0, first.stderr[-2000:]
    second = run([sys.executable, str(FILES / "reranker-cache.py")], env)
    assert second.returncode == 0, second.stderr[-2000:]
    assert len(calls.read_text().splitlines()) == 1, "the second start downloaded again"
    name = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    assert second.stdout.strip().splitlines() == [
        f"reranker-cache: {name} at {SHA} already in {cache}: no download",
        f"reranker-cache: {name} loads offline from {cache} (commit {SHA})"]
    # A new pinned revision is not in the cache: downloaded, beside the old one.
    newer = "d" * 40
    third = run([sys.executable, str(FILES / "reranker-cache.py")], {**env, "RERANKER_REVISION": newer})
    assert third.returncode == 0, third.stderr[-2000:]
    assert [json.loads(line)["revision"] for line in calls.read_text().splitlines()] == [SHA, newer]
    assert third.stdout.strip().endswith(f"(commit {newer})")


def test_reranker_incomplete_cache_is_downloaded_again(tmp_path: Path) -> None:
    """A download cut short (pod killed) leaves the commit's directory without a loadable model."""
    env, calls = _download_env(tmp_path, SHA)
    cache = Path(env["SENTENCE_TRANSFORMERS_HOME"])
    (cache / "models--cross-encoder--ms-marco-MiniLM-L-6-v2" / "snapshots" / SHA).mkdir(parents=True)
    done = run([sys.executable, str(FILES / "reranker-cache.py")], env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(calls.read_text().splitlines()) == 1
    assert "already in" in done.stdout and "incomplete, downloading it again" in done.stdout
    assert done.stdout.strip().endswith(f"(commit {SHA})")


@pytest.mark.parametrize("revision", ["", "main", "v1.0", SHA[:12], SHA.upper(), SHA + "0"])
def test_reranker_download_without_a_commit_sha_is_refused_before_any_download(tmp_path: Path, revision: str) -> None:
    env, calls = _download_env(tmp_path, revision)
    done = run([sys.executable, str(FILES / "reranker-cache.py")], env)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"reranker-cache: RERANKER_REVISION={revision!r} is not a commit sha"), line
    assert "openwebui.reranker.revision" in line
    assert not calls.exists()


def test_reranker_pvc_source_needs_no_revision(tmp_path: Path) -> None:
    """pvc/image caches are the operator's: loaded as Open WebUI resolves them, the commit reported."""
    repo = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    tiny_cross_encoder_cache(tmp_path, repo)
    env = {"RERANKER_SOURCE": "pvc", "RERANKER_REVISION": "", "RAG_RERANKING_MODEL": repo,
           "SENTENCE_TRANSFORMERS_HOME": str(tmp_path), "HF_HOME": str(tmp_path)}
    done = run([sys.executable, str(FILES / "reranker-cache.py")], env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith(f"(commit {'0' * 40})")
