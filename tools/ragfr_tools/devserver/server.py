"""HTTP side of the Ollama-API test double: the few routes Open WebUI calls, nothing more.

Routes: GET /, /api/version, /api/tags, /api/ps; POST /api/show, /api/embed, /api/embeddings,
/api/chat (streamed NDJSON or one JSON object, as Ollama does), /api/generate.
Models are named as Ollama names them: name:tag, the tag always shown (":latest" when none was given), the
default registry and namespace dropped (Ollama's Name.DisplayShortest). Without a model store the double holds
two: its chat model and the embedding model it was started with. With one (models_dir: an Ollama model
directory, manifests/<host>/<namespace>/<model>/<tag> + blobs/sha256-<hex>, e.g. the chart's OLLAMA_MODELS)
it holds exactly the models whose manifest and config blob are there, read at each request like Ollama's
/api/tags: the one named as the embedding model embeds, every other one chats (extractively), and any other
name is "not found".
Not Ollama's:
  GET /ragfr/requests -> {"chat": N, "generate": N, "embed": N, "embedded_queries": N, "embedded_passages": N},
    the requests (and the texts embedded, by side) since start, so a test can prove that no request reached
    the chat model (the evidence gate's refusals), and count what one question costs in embeddings;
  POST /ragfr/faults {"query_delay_s": S, "query_status": CODE} -> faults for the query embeddings that
    follow (uploads are untouched): each waits S seconds inside the embedding lock (a slow or saturated
    Ollama), or is answered with HTTP CODE (a failing one). {} clears them.
Embeddings run one request at a time (one lock): like Ollama on a CPU, a queue forms under load.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import tarfile
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ragfr.embed.base import Embedder
from ragfr_tools.devserver.extractive import answer

log = logging.getLogger(__name__)

CHAT_MODEL = "ragfr-extractive-test-double"
VERSION = "0.0.0-ragfr-test-double"
# Open WebUI prepends RAG_EMBEDDING_QUERY_PREFIX / RAG_EMBEDDING_CONTENT_PREFIX to the texts it sends;
# e5 needs to know which side a text is on, so the double reads the prefix and strips it.
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
BANNER = (
    "=" * 78 + "\n"
    "  ragfr TEST DOUBLE of the Ollama API on {url}\n"
    "  NOT a language model: chat answers are extractive (a context sentence + its source id).\n"
    "  Embeddings: {embedder} ({dims} dims), served as model '{model}'.\n"
    "  For tests and `make up` without Ollama only. Every response has X-Ragfr-Test-Double: 1.\n" + "=" * 78
)


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


DEFAULT_HOST, DEFAULT_NAMESPACE = "registry.ollama.ai", "library"


def canonical(name: str) -> str:
    """A model reference as Ollama's /api/tags shows it: "bge-m3" -> "bge-m3:latest", "bge-m3:567m" unchanged,
    "registry.ollama.ai/library/bge-m3:567m" -> "bge-m3:567m"."""
    name = name.strip().removeprefix(f"{DEFAULT_HOST}/{DEFAULT_NAMESPACE}/")
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def store_models(models_dir: Path) -> list[str]:
    """The names an Ollama model directory holds: one per manifest whose config blob is present (Ollama skips a
    manifest whose config it cannot open)."""
    root = models_dir / "manifests"
    names = []
    for manifest in sorted(p for p in root.glob("*/*/*/*") if p.is_file()):
        host, namespace, model, tag = manifest.relative_to(root).parts
        try:
            digest = str(json.loads(manifest.read_text(encoding="utf-8"))["config"]["digest"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not (models_dir / "blobs" / digest.replace(":", "-")).is_file():
            continue
        if host != DEFAULT_HOST:
            names.append(f"{host}/{namespace}/{model}:{tag}")
        elif namespace != DEFAULT_NAMESPACE:
            names.append(f"{namespace}/{model}:{tag}")
        else:
            names.append(f"{model}:{tag}")
    return names


def store_files(names: list[str]) -> dict[str, bytes]:
    """Files of an Ollama model directory holding `names` (relative paths, blobs first as a copy must write
    them): per model a manifest and its config blob and one "weights" layer, a few bytes each, laid out as
    Ollama lays them out. For tests that fill a model store the way an operator copies one."""
    blobs: dict[str, bytes] = {}
    manifests: dict[str, bytes] = {}
    for name in names:
        full = canonical(name)
        path, tag = full.rsplit(":", 1)
        parts = path.split("/")
        host, namespace, model = [DEFAULT_HOST, DEFAULT_NAMESPACE][: 3 - len(parts)] + parts
        layers = []
        for media, body in (("application/vnd.docker.container.image.v1+json",
                             json.dumps({"model_format": "test-double", "model_family": full}).encode()),
                            ("application/vnd.ollama.image.model", f"ragfr test double weights of {full}\n".encode())):
            digest = "sha256:" + hashlib.sha256(body).hexdigest()
            blobs[f"models/blobs/{digest.replace(':', '-')}"] = body
            layers.append({"mediaType": media, "digest": digest, "size": len(body)})
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                    "config": layers[0], "layers": layers[1:]}
        manifests[f"models/manifests/{host}/{namespace}/{model}/{tag}"] = json.dumps(manifest).encode()
    return {**blobs, **manifests}


def store_tar(names: list[str]) -> bytes:
    """store_files as a tar archive (directories 0755, files 0644), what `tar -C ~/.ollama -cf - models/blobs/…
    models/manifests/…` gives for these models."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        made: set[str] = set()
        for rel, body in store_files(names).items():
            parents = rel.split("/")[:-1]
            for i in range(1, len(parents) + 1):
                d = "/".join(parents[:i])
                if d not in made:
                    made.add(d)
                    info = tarfile.TarInfo(d)
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
            info = tarfile.TarInfo(rel)
            info.size, info.mode = len(body), 0o644
            tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


class DoubleState:
    """What the handler threads share: the embedder (thread-safe by a lock) and the model names."""

    def __init__(self, embedder: Embedder, embedding_model: str, models_dir: Path | None = None) -> None:
        self.embedder = embedder
        self.embedding_model = canonical(embedding_model)
        self.models_dir = models_dir
        self.lock = threading.Lock()
        self._counts = {"chat": 0, "generate": 0, "embed": 0, "embedded_queries": 0, "embedded_passages": 0}
        self._counts_lock = threading.Lock()
        self.query_delay_s = 0.0
        self.query_status = 0

    def count(self, route: str, n: int = 1) -> None:
        with self._counts_lock:
            self._counts[route] += n

    def counts(self) -> dict[str, int]:
        with self._counts_lock:
            return dict(self._counts)

    def embed(self, texts: list[str]) -> list[list[float]]:
        queries = [i for i, t in enumerate(texts) if t.startswith(QUERY_PREFIX)]
        passages = [i for i in range(len(texts)) if i not in set(queries)]
        out: list[list[float]] = [[] for _ in texts]
        self.count("embedded_queries", len(queries))
        self.count("embedded_passages", len(texts) - len(queries))
        with self.lock:
            if queries and self.query_delay_s:
                time.sleep(self.query_delay_s)  # a fault a test asked for (POST /ragfr/faults)
            if queries:
                vectors = self.embedder.embed_queries([texts[i][len(QUERY_PREFIX) :] for i in queries])
                for i, v in zip(queries, vectors, strict=True):
                    out[i] = list(v)
            if passages:
                vectors = self.embedder.embed_passages([texts[i].removeprefix(PASSAGE_PREFIX) for i in passages])
                for i, v in zip(passages, vectors, strict=True):
                    out[i] = list(v)
        return out

    def held(self) -> list[str]:
        """The names this double holds, as /api/tags lists them."""
        if self.models_dir is None:
            return [canonical(CHAT_MODEL), self.embedding_model]
        return store_models(self.models_dir)

    def kind(self, requested: str) -> str | None:
        """ "embedding" or "chat" for a model this double holds, None for any other name."""
        name = canonical(requested)
        if name not in self.held():
            return None
        return "embedding" if name == self.embedding_model else "chat"

    def models(self) -> list[dict[str, Any]]:
        def entry(name: str) -> dict[str, Any]:
            family = "embedding" if name == self.embedding_model else "extractive"
            return {
                "name": name,
                "model": name,
                "modified_at": _now(),
                "size": 0,
                "digest": "0" * 64,
                "details": {"format": "test-double", "family": family, "parameter_size": "", "quantization_level": ""},
            }

        return [entry(name) for name in self.held()]


class Handler(BaseHTTPRequestHandler):
    server_version = "ragfr-ollama-test-double"
    state: DoubleState  # set on the subclass made by make_server

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def _send(self, status: int, payload: Any, content_type: str = "application/json") -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Ragfr-Test-Double", "1")
        self.end_headers()
        self.wfile.write(body)

    def _json_body(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            data = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send(400, {"error": "request body is not JSON"})
            return None
        if not isinstance(data, dict):
            self._send(400, {"error": "request body must be a JSON object"})
            return None
        return data

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/", "/api"):
            self._send(200, b"Ollama is running (ragfr TEST DOUBLE)", "text/plain")
        elif path == "/api/version":
            self._send(200, {"version": VERSION})
        elif path == "/api/tags":
            self._send(200, {"models": self.state.models()})
        elif path == "/api/ps":
            self._send(200, {"models": []})
        elif path == "/ragfr/requests":
            self._send(200, self.state.counts())
        elif path == "/ragfr/faults":
            self._send(200, {"query_delay_s": self.state.query_delay_s, "query_status": self.state.query_status})
        else:
            self._send(404, {"error": f"not found: {path} (ragfr test double)"})

    def do_HEAD(self) -> None:
        self._send(200, b"", "text/plain")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        data = self._json_body()
        if data is None:
            return
        routes = {
            "/api/embed": self._embed,
            "/api/embeddings": self._embeddings,
            "/api/chat": self._chat,
            "/api/generate": self._generate,
            "/api/show": self._show,
        }
        if path == "/ragfr/faults":
            self._faults(data)
            return
        route = routes.get(path)
        if route is None:
            self._send(404, {"error": f"not found: {path} (ragfr test double)"})
            return
        counted = {"/api/chat": "chat", "/api/generate": "generate", "/api/embed": "embed", "/api/embeddings": "embed"}
        if path in counted:  # counted on arrival: a request for an unknown model still reached the "model"
            self.state.count(counted[path])
        route(data)

    def _faults(self, data: dict[str, Any]) -> None:
        try:
            delay, status = float(data.get("query_delay_s") or 0), int(data.get("query_status") or 0)
        except (TypeError, ValueError):
            self._send(400, {"error": "query_delay_s: seconds, query_status: an HTTP status code"})
            return
        self.state.query_delay_s, self.state.query_status = max(delay, 0.0), status
        self._send(200, {"query_delay_s": self.state.query_delay_s, "query_status": self.state.query_status})

    def _query_fault(self, texts: list[str]) -> bool:
        status = self.state.query_status
        if status and any(t.startswith(QUERY_PREFIX) for t in texts):
            self._send(status, {"error": f"fault injected by a test: HTTP {status} (ragfr test double)"})
            return True
        return False

    def _require_model(self, data: dict[str, Any], kind: str) -> bool:
        name = str(data.get("model", ""))
        if self.state.kind(name) != kind:
            self._send(404, {"error": f"model '{name}' not found (ragfr test double holds "
                                      f"{', '.join(self.state.held()) or 'no model'}; {kind} model wanted)"})
            return False
        return True

    def _embed(self, data: dict[str, Any]) -> None:
        if not self._require_model(data, "embedding"):
            return
        raw = data.get("input", [])
        texts = [raw] if isinstance(raw, str) else [str(t) for t in raw]
        if self._query_fault(texts):
            return
        started = time.monotonic()
        vectors = self.state.embed(texts)
        self._send(
            200,
            {
                "model": data["model"],
                "embeddings": vectors,
                "total_duration": int((time.monotonic() - started) * 1e9),
                "load_duration": 0,
                "prompt_eval_count": sum(len(t.split()) for t in texts),
            },
        )

    def _embeddings(self, data: dict[str, Any]) -> None:
        if not self._require_model(data, "embedding"):
            return
        texts = [str(data.get("prompt", ""))]
        if self._query_fault(texts):
            return
        self._send(200, {"embedding": self.state.embed(texts)[0]})

    def _show(self, data: dict[str, Any]) -> None:
        name = str(data.get("model") or data.get("name") or "")
        kind = self.state.kind(name)
        if kind is None:
            self._send(404, {"error": f"model '{name}' not found (ragfr test double)"})
            return
        capabilities = ["completion"] if kind == "chat" else ["embedding"]
        self._send(200, {"modelfile": "", "parameters": "", "template": "", "details": {}, "model_info": {},
                         "capabilities": capabilities})

    def _reply(self, data: dict[str, Any], text: str, key: str) -> None:
        message: Any = {"role": "assistant", "content": text} if key == "message" else text
        final: dict[str, Any] = {"model": data["model"], "created_at": _now(), "done": True, "done_reason": "stop",
                                 "total_duration": 0, "eval_count": len(text.split())}
        if data.get("stream", True) is False:
            self._send(200, {"model": data["model"], "created_at": _now(), key: message, **final})
            return
        empty: Any = {"role": "assistant", "content": ""} if key == "message" else ""
        lines = [{"model": data["model"], "created_at": _now(), key: message, "done": False}, {key: empty, **final}]
        self._send(200, b"".join(json.dumps(line).encode() + b"\n" for line in lines), "application/x-ndjson")

    def _chat(self, data: dict[str, Any]) -> None:
        if not self._require_model(data, "chat"):
            return
        messages = data.get("messages") or []
        self._reply(data, answer(messages if isinstance(messages, list) else []), "message")

    def _generate(self, data: dict[str, Any]) -> None:
        if not self._require_model(data, "chat"):
            return
        self._reply(data, answer([{"role": "user", "content": str(data.get("prompt", ""))}]), "response")


def make_server(host: str, port: int, embedder: Embedder, embedding_model: str,
                models_dir: Path | None = None) -> ThreadingHTTPServer:
    handler = type("BoundHandler", (Handler,), {"state": DoubleState(embedder, embedding_model, models_dir)})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
