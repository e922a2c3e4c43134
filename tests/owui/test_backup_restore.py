"""Backups proven through the real Open WebUI 0.12.4 (patched, on loopback, both its databases in our
PostgreSQL as in the chart): an admin (sign-up then closed), a knowledge base with an uploaded French
document, a chat; the chart's backup script AS RENDERED; both databases, both roles and the data directory
dropped; ragdb-init.sh + the chart's restore script; a NEW Open WebUI process must let the same admin in,
list the same chat, serve the same file and answer the same knowledge-base query with the same passage ids.
The Ollama API is the repository's test double (real offline e5 embeddings): no Ollama runs here."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from tests.support.backup import Release, drop, fake_release, ragdb_init, rendered_scripts
from tests.support.backup import run_script as _run

from ragfr_tools.fixtures import ANSWERABLE as QUESTION
from ragfr_tools.fixtures import CONTRACT as DOCUMENT

from .conftest import OWUI_PYTHON, owui_env
from .stack import EMBED_NAME, ENV_FILE, call, free_port, multipart, start_double, stop, wait_until_up

pytestmark = [pytest.mark.owui, pytest.mark.slow]
RAGFR = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "ragfr"
ADMIN = {"name": "Admin", "email": "admin@example.org", "password": "ragfr-e2e-Passw0rd!"}


def _env(release: Release, tmp_path: Path, site: Path, patched: Path, ollama: str) -> dict[str, str]:
    settings = {k: str(v) for k, v in yaml.safe_load(ENV_FILE.read_text(encoding="utf-8")).items()}
    settings.update(
        PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH="384", RAG_EMBEDDING_MODEL=EMBED_NAME, OLLAMA_BASE_URL=ollama,
        RAG_OLLAMA_BASE_URL=ollama, RAG_EMBEDDING_QUERY_PREFIX="query: ", RAG_EMBEDDING_CONTENT_PREFIX="passage: ",
        RAG_RERANKING_MODEL="", ENABLE_RETRIEVAL_QUERY_GENERATION="false", ENABLE_TITLE_GENERATION="false",
        ENABLE_TAGS_GENERATION="false", ENABLE_FOLLOW_UP_GENERATION="false",
        ENABLE_AUTOCOMPLETE_GENERATION="false", CHUNK_SIZE="300", CHUNK_OVERLAP="0",
    )
    env = owui_env(tmp=tmp_path, site=site, dsn=release.ragfr_url, dims=384, patched_root=patched, extra=settings)
    # As in the chart: vectors in the ragfr database, Open WebUI's own tables in the openwebui database.
    env.update(PGVECTOR_DB_URL=release.ragfr_url, DATABASE_URL=release.owui_url)
    return env


class OpenWebUI:
    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env, self.cwd, self.proc, self.url = env, cwd, None, ""
        self.starts = 0

    def __enter__(self) -> str:
        port = free_port()
        self.starts += 1
        self.log = self.cwd / f"open-webui-{self.starts}.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(OWUI_PYTHON), "-m", "uvicorn", "open_webui.main:app", "--host", "127.0.0.1", "--port", str(port)],
                cwd=self.cwd, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(self.url + "/health", self.proc, self.log, 720)  # a hang guard (see stack.py)
        except BaseException:
            stop(self.proc)
            raise
        return self.url

    def __exit__(self, *exc: Any) -> None:
        assert self.proc is not None
        stop(self.proc)


def _query_passages(url: str, token: str, kb: str) -> list[tuple[Any, ...]]:
    """The knowledge-base query as Open WebUI serves it: per passage, the file, its offset, the chunk's hash
    and ragfr's component ranks (Open WebUI's reply carries no chunk id; the ids are compared in SQL)."""
    found = call("POST", url + "/api/v1/retrieval/query/collection",
                 {"collection_names": [kb], "query": QUESTION, "k": 5}, token)
    return [(m["file_id"], m["start_index"], m["_chunk_hash"], m["ragfr_rank"], m["ragfr_lexical_rank"],
             m["ragfr_semantic_rank"], round(d, 6))
            for m, d in zip(found["metadatas"][0], found["distances"][0], strict=True)]


def _chunk_ids(release: Release) -> list[tuple[str, str]]:
    with psycopg.connect(release.ragfr_url) as conn:
        return conn.execute("SELECT id, collection_name FROM document_chunk ORDER BY id").fetchall()


def _signup_refused(url: str) -> str:
    try:
        call("POST", url + "/api/v1/auths/signup", {"name": "Intrus", "email": "intrus@example.org",
                                                     "password": "ragfr-e2e-Passw0rd!"})
    except AssertionError as err:
        return str(err)
    return "accepted"


@pytest.fixture
def release(pg_dsn: str, tmp_path: Path) -> Iterator[Release]:
    with fake_release(pg_dsn, tmp_path) as rel:
        yield rel


@pytest.fixture
def ollama_double(tmp_path: Path) -> Iterator[str]:
    double = start_double(tmp_path)
    try:
        yield double.url
    finally:
        stop(double.proc)


@pytest.fixture
def owui_process_env(release: Release, tmp_path: Path, owui_site_packages: Path, patched_tree: Path,
                     ollama_double: str) -> Iterator[dict[str, str]]:
    migrated = subprocess.run([str(RAGFR), "migrate", "--dsn", release.ragfr_url, "--dims", "384",
                               "--embedding-model", "local:multilingual-e5-small"],
                              capture_output=True, text=True, check=False)
    assert migrated.returncode == 0, migrated.stderr
    yield _env(release, tmp_path, owui_site_packages, patched_tree, ollama_double)


def test_restore_brings_back_users_chats_files_and_the_same_passages(
    release: Release, owui_process_env: dict[str, str], tmp_path: Path
) -> None:
    data_dir = Path(owui_process_env["DATA_DIR"])
    server = OpenWebUI(owui_process_env, tmp_path)
    with server as url:
        api = url + "/api/v1"
        admin = call("POST", api + "/auths/signup", ADMIN)
        token = admin["token"]
        assert admin["role"] == "admin"  # the very first account may sign up although ENABLE_SIGNUP=false ...
        assert "403" in _signup_refused(url)  # ... and nobody after it
        kb = call("POST", api + "/knowledge/create", {"name": "Contrats", "description": "habitation"}, token)
        raw, ctype = multipart("conditions-generales.txt", DOCUMENT.encode("utf-8"))
        uploaded = call("POST", api + "/files/?process=true&process_in_background=false", token=token, raw=raw,
                        content_type=ctype)
        call("POST", f"{api}/knowledge/{kb['id']}/file/add", {"file_id": uploaded["id"]}, token)
        chat = call("POST", api + "/chats/new", {"chat": {"title": "Délais de déclaration", "messages": [
            {"role": "user", "content": QUESTION}]}}, token)
        before = _query_passages(url, token, kb["id"])
        assert before, "the knowledge base query returned nothing"
        ids_before = _chunk_ids(release)

    scripts = rendered_scripts(tmp_path)
    backup_dir = tmp_path / "backups"
    backup_dir.mkdir()
    t0 = time.monotonic()
    done = _run(["sh", str(scripts["backup.sh"])], {
        "RAGFR_DATABASE_URL": release.ragfr_url, "OPENWEBUI_DATABASE_URL": release.owui_url,
        "BACKUP_DIR": str(backup_dir), "BACKUP_KEEP": "7", "DATA_DIR": str(data_dir)})
    backup_s = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    (set_dir,) = [p for p in backup_dir.iterdir() if not p.name.startswith(".")]
    sizes = {p.name: p.stat().st_size for p in set_dir.iterdir()}

    drop(release)
    shutil.rmtree(data_dir)
    data_dir.mkdir()
    ragdb_init(release)
    t0 = time.monotonic()
    done = _run(["sh", str(scripts["restore.sh"])], {
        "RESTORE_SET": str(set_dir), "RAGFR_DATABASE_URL": release.ragfr_url,
        "OPENWEBUI_DATABASE_URL": release.owui_url, "DATA_DIR": str(data_dir), "TMPDIR": str(tmp_path)})
    restore_s = time.monotonic() - t0
    assert done.returncode == 0, done.stderr

    with server as url:
        api = url + "/api/v1"
        token = call("POST", api + "/auths/signin", {"email": ADMIN["email"], "password": ADMIN["password"]})["token"]
        assert "403" in _signup_refused(url)
        chats = call("GET", api + "/chats/", token=token)
        assert [c["id"] for c in chats] == [chat["id"]] and chats[0]["title"] == "Délais de déclaration"
        req = urllib.request.Request(f"{api}/files/{uploaded['id']}/content",
                                     headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            assert resp.read() == DOCUMENT.encode("utf-8")
        assert _query_passages(url, token, kb["id"]) == before
    assert _chunk_ids(release) == ids_before
    print(f"\nOpen WebUI restore: backup {backup_s:.2f}s, restore {restore_s:.2f}s, set sizes {sizes}")
