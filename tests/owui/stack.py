"""One Open WebUI 0.12.4 server run as `make up` runs it with the e5 test double, for the owui tests.

Settings: charts/ragfr/files/openwebui-env.yaml (the one settings file of the chart and `make up`) with what the
chart computes from values.yaml's defaults (ragfr_tools.owui_settings: the analysts' rights, the chat models
listed), then exactly the values `scripts/up.sh` computes or overrides on a machine without Ollama:
  PGVECTOR_DB_URL / PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH=384   our migrated database (naming the writer's
                                                                 embedding model, as up.sh and the chart do), e5's width;
  OLLAMA_BASE_URL / RAG_OLLAMA_BASE_URL / RAG_EMBEDDING_MODEL    the Ollama-API test double and its e5 model;
  RAG_EMBEDDING_QUERY_PREFIX / RAG_EMBEDDING_CONTENT_PREFIX      e5's "query: " / "passage: " sides;
  RAG_RERANKING_MODEL=""                                         no cross-encoder can be downloaded offline
                                                                 (Open WebUI then re-scores by embeddings);
  RAGFR_METRICS_PORT (+ RAGFR_METRICS_ADDR=127.0.0.1)            a free port, as the chart's openwebui.metrics.port.
Nothing else: retrieval behaviour (query generation, chunking, top-k, hybrid search, side tasks) is the
settings file's. The chat "model" is the double (not a language model: it quotes the context sentence
sharing most French lexemes with the question, with its [source id]); it counts the chat requests it
receives (GET /ragfr/requests), which is how the tests prove that a refusal called no model.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.paths import REPO

from ragfr_tools import owui_client as client
from ragfr_tools import owui_settings

from .conftest import OWUI_PYTHON, owui_env

ENV_FILE = REPO / "charts" / "ragfr" / "files" / "openwebui-env.yaml"
EMBED_NAME = "multilingual-e5-small-test-double"
CHAT_MODEL = "ragfr-extractive-test-double:latest"  # Ollama names carry a tag; Open WebUI lists them so
E5_SPACE = "local:multilingual-e5-small"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def call(method: str, url: str, body: Any = None, token: str | None = None, *, raw: bytes | None = None,
         content_type: str = "application/json", timeout: float = 300) -> Any:
    """owui_client.call, with an HTTP error as a test failure."""
    try:
        return client.call(method, url, body, token, raw=raw, content_type=content_type, timeout=timeout)
    except client.ApiError as err:
        raise AssertionError(str(err)) from err


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


def settings_file() -> dict[str, str]:
    """The settings file, then what the chart computes from values.yaml's defaults (as scripts/up.sh): the
    analysts' rights and the chat models Open WebUI lists (the double's chat model, not its embedding model)."""
    return owui_settings.local_settings([CHAT_MODEL], EMBED_NAME)


@dataclass
class Double:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def chat_requests(self) -> int:
        counts = call("GET", self.url + "/ragfr/requests")
        return int(counts["chat"]) + int(counts["generate"])


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path
    double: Double
    dsn: str
    metrics_url: str = ""

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample of ragfr's Prometheus endpoint, parsed (a malformed exposition text raises)."""
        from prometheus_client.parser import text_string_to_metric_families

        with urllib.request.urlopen(self.metrics_url, timeout=30) as resp:
            text = resp.read().decode("utf-8")
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for f in text_string_to_metric_families(text) for s in f.samples}

    def metric(self, name: str, **labels: str) -> float:
        return self.metrics()[(name, tuple(sorted(labels.items())))]

    def log_events(self, event: str) -> list[dict[str, Any]]:
        """ragfr's JSON log lines of one kind ("search", "gate") from Open WebUI's output, in order."""
        out = []
        for line in self.log.read_text(encoding="utf-8", errors="replace").splitlines():
            if f'"event": "{event}"' in line:
                out.append(json.loads(line[line.index("{"):]))
        return out


def start_double(tmp: Path) -> Double:
    port_file, log = tmp / "double.port", tmp / "double.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragfr_tools.devserver", "--port", "0", "--port-file", str(port_file),
             "--embedding-model-name", EMBED_NAME],
            stdout=out, stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 120
    while not port_file.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    if not port_file.exists():
        stop(proc)
        raise AssertionError(log.read_text(errors="replace"))
    url = f"http://127.0.0.1:{port_file.read_text().strip()}"
    wait_until_up(url + "/api/version", proc, log, 120)  # a hang guard; another test lane may load the cores
    return Double(url, proc, log)


def start_open_webui(tmp: Path, site: Path, patched: Path, dsn: str, double: Double,
                     database_env: dict[str, str] | None = None, extra_env: dict[str, str] | None = None) -> Server:
    """database_env: the database variables of a rendered chart (DATABASE_URL, PGVECTOR_DB_URL, PGPASSFILE)
    instead of `make up`'s URL. extra_env: settings an option turns on, applied last (the cross-encoder of
    `make up UP_RERANKER=...`: RAG_RERANKING_MODEL, SENTENCE_TRANSFORMERS_HOME, HF_HOME; a gate threshold)."""
    settings = settings_file()
    sep = "&" if "?" in dsn else "?"
    settings.update(
        # As scripts/up.sh: Open WebUI names the model of the vectors it writes (migration 0009 checks it).
        PGVECTOR_DB_URL=f"{dsn}{sep}options=-c%20ragfr.writer_model%3D{E5_SPACE.replace(':', '%3A')}",
        PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH="384",
        RAG_EMBEDDING_MODEL=EMBED_NAME,
        OLLAMA_BASE_URL=double.url,
        RAG_OLLAMA_BASE_URL=double.url,
        RAG_EMBEDDING_QUERY_PREFIX="query: ",
        RAG_EMBEDDING_CONTENT_PREFIX="passage: ",
        RAG_RERANKING_MODEL="",
        RAGFR_METRICS_PORT=str(metrics_port := free_port()),
        RAGFR_METRICS_ADDR="127.0.0.1",
    )
    settings.update(database_env or {})
    settings.update(extra_env or {})
    env = owui_env(tmp=tmp, site=site, dsn=dsn, dims=384, patched_root=patched, extra=settings)
    port, log = free_port(), tmp / "open-webui.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(OWUI_PYTHON), "-m", "uvicorn", "open_webui.main:app", "--host", "127.0.0.1", "--port", str(port)],
            cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        # A hang guard, not a speed check: Open WebUI took more than 240 s to start with the two cores at load
        # 13 (helpers' measurement for issue 37 item 9), and scripts/test.sh runs another lane beside it.
        wait_until_up(url + "/health", proc, log, 720)
    except AssertionError:
        stop(proc)
        raise
    return Server(url, proc, log, double, dsn, f"http://127.0.0.1:{metrics_port}/metrics")


def sign_up_admin(server: Server) -> str:
    return client.sign_up_admin(server.url)


def knowledge_base(server: Server, token: str, name: str, files: dict[str, str]) -> str:
    return client.knowledge_base(server.url, token, name, files)


def ask(server: Server, token: str, question: str, kb_id: str) -> dict[str, Any]:
    return client.ask(server.url, token, CHAT_MODEL, question, kb_id)


answer_text, passages, multipart = client.answer_text, client.passages, client.multipart


CITATION = re.compile(r"\[(\d+)\]")


def add_analyst(server: Server, admin_token: str, name: str, email: str, password: str) -> str:
    """An analyst as the admin adds one (Admin Panel > Users > Add User: POST /api/v1/auths/add, role `user`);
    the analyst's own token, from signing in with that password."""
    call("POST", server.url + "/api/v1/auths/add",
         {"name": name, "email": email, "password": password, "role": "user"}, admin_token)
    signed = call("POST", server.url + "/api/v1/auths/signin", {"email": email, "password": password})
    assert signed["role"] == "user", signed["role"]
    return str(signed["token"])
