"""The Ollama backend through the official `ollama` client, against OllamaEmbedTestDouble: a tiny HTTP
server written here that speaks Ollama's `/api/embed` (no Ollama binary exists on this machine). It is a
TEST DOUBLE: its vectors are deterministic noise, only the protocol is real."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from ragfr.embed import EmbedderError, load_embedder

DIMS = 8


class OllamaEmbedTestDouble(ThreadingHTTPServer):
    """Knows the models in `models`; records every request body; `broken` makes it answer wrong counts."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.models = {"nomic-embed-text:latest", "bge-m3"}
        self.requests: list[dict[str, Any]] = []
        self.broken = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def _vector(text: str) -> list[float]:
    # Deliberately NOT unit length: the embedder must normalise whatever the server returns.
    digest = hashlib.sha256(text.encode()).digest()
    return [3.0 * (b - 128) / 128 for b in digest[:DIMS]]


class _Handler(BaseHTTPRequestHandler):
    server: OllamaEmbedTestDouble

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        if self.path != "/api/embed":
            return self._reply(404, {"error": "not found"})
        if body["model"] not in self.server.models:
            return self._reply(404, {"error": f"model \"{body['model']}\" not found, try pulling it first"})
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = [_vector(t) for t in texts]
        if self.server.broken:
            vectors = vectors[:-1]
        self._reply(200, {"model": body["model"], "embeddings": vectors})

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def ollama_double() -> Iterator[OllamaEmbedTestDouble]:
    server = OllamaEmbedTestDouble()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_dims_probe_batching_and_normalisation(ollama_double: OllamaEmbedTestDouble) -> None:
    embedder = load_embedder("ollama:bge-m3", ollama_host=ollama_double.url, batch_size=3, cache=False)
    assert embedder.dims == DIMS and embedder.model_id == "ollama:bge-m3"
    assert len(ollama_double.requests) == 1  # the probe
    texts = [f"texte {i}" for i in range(7)]
    vectors = embedder.embed_passages(texts)
    batches = [r["input"] for r in ollama_double.requests[1:]]
    assert batches == [texts[0:3], texts[3:6], texts[6:7]]
    assert all(r["model"] == "bge-m3" and r["truncate"] is False for r in ollama_double.requests)
    for text, vector in zip(texts, vectors, strict=True):
        raw = np.array(_vector(text))
        np.testing.assert_allclose(vector, raw / np.linalg.norm(raw), atol=1e-6)


def test_host_from_environment(ollama_double: OllamaEmbedTestDouble, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", ollama_double.url)
    embedder = load_embedder("ollama:nomic-embed-text:latest", cache=False)
    assert embedder.embed_queries(["bonjour"]) and len(ollama_double.requests) == 2


def test_missing_model_says_how_to_pull_it(ollama_double: OllamaEmbedTestDouble) -> None:
    with pytest.raises(EmbedderError, match=r"no model 'mxbai-embed-large'.*ollama pull mxbai-embed-large"):
        load_embedder("ollama:mxbai-embed-large", ollama_host=ollama_double.url, cache=False)


def test_unreachable_server_names_the_host() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(EmbedderError, match=rf"cannot reach Ollama at http://127.0.0.1:{port}.*OLLAMA_HOST"):
        load_embedder("ollama:bge-m3", ollama_host=f"http://127.0.0.1:{port}", cache=False)


def test_wrong_vector_count_is_an_error(ollama_double: OllamaEmbedTestDouble) -> None:
    embedder = load_embedder("ollama:bge-m3", ollama_host=ollama_double.url, cache=False)
    ollama_double.broken = True
    with pytest.raises(EmbedderError, match="returned 1 vectors for 2 texts"):
        embedder.embed_passages(["a", "b"])
