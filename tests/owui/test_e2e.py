"""End to end: the patched Open WebUI 0.12.4 SERVER on loopback, our migrated PostgreSQL, the Ollama-API
test double (real offline e5 embeddings, extractive chat). Everything goes through Open WebUI's REST API:
admin sign-up, a knowledge base, a French document upload, then a chat question with an inflected form.

Open WebUI's settings come from charts/ragfr/files/openwebui-env.yaml (the one documented place), with
only what this machine requires overridden: the e5 test double instead of bge-m3 (384 dims), no
cross-encoder (none can be downloaded offline: Open WebUI then re-scores by embeddings), and the LLM side
tasks (query/title/tag generation) off because the double is not a language model.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import OWUI_PYTHON, REPO, owui_env

pytestmark = [pytest.mark.owui, pytest.mark.slow]

ENV_FILE = REPO / "charts" / "ragfr" / "files" / "openwebui-env.yaml"
EMBED_NAME = "multilingual-e5-small-test-double"
CHAT_MODEL = "ragfr-extractive-test-double"
DOCUMENT = """Conditions générales de l'assurance habitation Sérénité

Article 1 - Objet du contrat. Le présent contrat garantit votre résidence principale contre l'incendie, \
les dégâts des eaux et les catastrophes naturelles reconnues par arrêté.

Article 2 - Déclaration. Tout sinistre doit être déclaré à l'assureur par écrit dans un délai de cinq \
jours ouvrés à compter de sa découverte, par lettre recommandée ou sur l'espace client.

Article 3 - Vol. Le vol de bijoux n'est couvert que si les objets étaient rangés dans un coffre-fort agréé \
et en cas d'effraction constatée par les autorités.

Article 4 - Franchise. Une franchise de 150 euros reste à la charge de l'assuré pour chaque événement, \
sauf en cas de catastrophe naturelle où la franchise légale s'applique.

Article 5 - Résiliation. Vous pouvez résilier le contrat chaque année à la date d'échéance, avec un \
préavis de deux mois, ou à tout moment après la première année.
"""
QUESTION = "Quels délais pour mes sinistres ?"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def call(method: str, url: str, body: Any = None, token: str | None = None, *, raw: bytes | None = None,
         content_type: str = "application/json", timeout: float = 300) -> Any:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", content_type)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        raise AssertionError(f"{method} {url} -> {err.code}: {err.read()[:2000]!r}") from err


def wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{url} exited with {proc.returncode}:\n{log.read_text(errors='replace')[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} not up after {seconds:.0f}s:\n{log.read_text(errors='replace')[-4000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def ollama_double(tmp_path: Path) -> Iterator[str]:
    port_file, log = tmp_path / "double.port", tmp_path / "double.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragfr_tools.devserver", "--port", "0", "--port-file", str(port_file),
             "--embedding-model-name", EMBED_NAME],
            stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while not port_file.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert port_file.exists(), log.read_text(errors="replace")
        url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        wait_until_up(url + "/api/version", proc, log, 30)
        yield url
    finally:
        stop(proc)


@pytest.fixture
def open_webui(
    tmp_path: Path, owui_site_packages: Path, patched_tree: Path, migrated_db: Any, ollama_double: str
) -> Iterator[str]:
    dsn = str(migrated_db(dims=384, model="local:multilingual-e5-small"))
    settings = {k: str(v) for k, v in yaml.safe_load(ENV_FILE.read_text(encoding="utf-8")).items()}
    settings.update(
        PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH="384",
        RAG_EMBEDDING_MODEL=EMBED_NAME,
        OLLAMA_BASE_URL=ollama_double,
        RAG_OLLAMA_BASE_URL=ollama_double,
        RAG_EMBEDDING_QUERY_PREFIX="query: ",
        RAG_EMBEDDING_CONTENT_PREFIX="passage: ",
        RAG_RERANKING_MODEL="",
        ENABLE_RETRIEVAL_QUERY_GENERATION="false",
        ENABLE_TITLE_GENERATION="false",
        ENABLE_TAGS_GENERATION="false",
        ENABLE_FOLLOW_UP_GENERATION="false",
        ENABLE_AUTOCOMPLETE_GENERATION="false",
        CHUNK_SIZE="300",
        CHUNK_OVERLAP="0",
    )
    env = owui_env(tmp=tmp_path, site=owui_site_packages, dsn=dsn, dims=384, patched_root=patched_tree,
                   extra=settings)
    env.update(PGVECTOR_DB_URL=dsn, PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH="384")
    port, log = free_port(), tmp_path / "open-webui.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(OWUI_PYTHON), "-m", "uvicorn", "open_webui.main:app", "--host", "127.0.0.1", "--port", str(port)],
            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(url + "/health", proc, log, 240)
        yield url
    finally:
        stop(proc)
        print(log.read_text(errors="replace")[-3000:])


def multipart(filename: str, content: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode() + content + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def test_french_question_through_open_webui_rest_api(open_webui: str) -> None:
    api = open_webui + "/api/v1"
    admin = call("POST", api + "/auths/signup",
                 {"name": "Admin", "email": "admin@example.org", "password": "ragfr-e2e-Passw0rd!"})
    token = admin["token"]
    assert admin["role"] == "admin"

    kb = call("POST", api + "/knowledge/create", {"name": "Contrats", "description": "assurance habitation"}, token)
    raw, ctype = multipart("conditions-generales.txt", DOCUMENT.encode("utf-8"))
    uploaded = call("POST", api + "/files/?process=true&process_in_background=false", token=token, raw=raw,
                    content_type=ctype)
    added = call("POST", f"{api}/knowledge/{kb['id']}/file/add", {"file_id": uploaded["id"]}, token)
    assert added is not None

    reply = call("POST", open_webui + "/api/chat/completions", {
        "model": f"{CHAT_MODEL}:latest",  # Ollama names carry a tag; Open WebUI lists them so
        "stream": False,
        "messages": [{"role": "user", "content": QUESTION}],
        "files": [{"type": "collection", "id": kb["id"]}],
    }, token)
    sources = reply.get("sources") or []
    assert sources, f"no sources in the reply: {json.dumps(reply)[:2000]}"
    documents = [d for s in sources for d in s["document"]]
    metadatas = [m for s in sources for m in s["metadata"]]
    print("sources:", json.dumps([{"text": d[:60], **{k: v for k, v in m.items() if k.startswith("ragfr_")}}
                                  for d, m in zip(documents, metadatas, strict=True)], ensure_ascii=False, indent=1))
    assert 1 <= len(documents) <= 3, documents
    # Every chunk served came through ragfr, with its component ranks.
    for meta in metadatas:
        assert "ragfr_rrf_score" in meta and "ragfr_lexical_rank" in meta and "ragfr_semantic_rank" in meta, meta
    declaration = [m for d, m in zip(documents, metadatas, strict=True) if "Tout sinistre doit être déclaré" in d]
    assert declaration, f"the Article 2 chunk is missing from the sources: {documents}"
    # "sinistres" and "délais" reach "sinistre" / "délai" only through the French lexical arm.
    assert declaration[0]["ragfr_lexical_rank"] == 1, declaration[0]
    answer = reply["choices"][0]["message"]["content"]
    print("answer:", answer)
    assert "sinistre" in answer, answer
