"""A recorded fake of the Kubernetes API server, for the few endpoints `ragfr embeddings k8s` uses.

No API server can run on this machine, so the official client talks HTTP to this stand-in instead. It
serves objects seeded from the chart's own rendered manifests (charts/ragfr via helm-python-sdk), answers
as the real server does (201 on create, 409 AlreadyExists, 404 NotFound, strategic-merge PATCH of maps,
Job status progressing from a script), and records every request so tests can assert the exact calls.
It is a fake: tests using it say so in their names.
"""

from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

_COLLECTIONS = {
    ("v1", "ConfigMap"): "/api/v1/namespaces/{ns}/configmaps",
    ("v1", "ServiceAccount"): "/api/v1/namespaces/{ns}/serviceaccounts",
    ("apps/v1", "Deployment"): "/apis/apps/v1/namespaces/{ns}/deployments",
    ("rbac.authorization.k8s.io/v1", "Role"): "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    ("batch/v1", "Job"): "/apis/batch/v1/namespaces/{ns}/jobs",
}


def _collection_paths(namespace: str) -> set[str]:
    return {template.format(ns=namespace) for template in _COLLECTIONS.values()}


def _merge(into: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": message,
            "code": code}


class FakeKube:
    def __init__(self, namespace: str, seed: list[dict[str, Any]], job_statuses: list[dict[str, Any]] | None = None):
        self.namespace = namespace
        self.objects: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self.job_statuses = job_statuses or [{"active": 1}, {"succeeded": 1, "conditions": [
            {"type": "Complete", "status": "True"}]}]
        self._job_reads = 0
        for obj in seed:
            self._store(copy.deepcopy(obj))
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length)) if length else None

            def _reply(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                fake.requests.append(("GET", self.path, None))
                self._reply(*fake.get(self.path))

            def do_POST(self) -> None:
                body = self._body()
                fake.requests.append(("POST", self.path, body))
                self._reply(*fake.create(self.path, body))

            def do_PATCH(self) -> None:
                body = self._body()
                fake.requests.append(("PATCH", self.path, {"content-type": self.headers["Content-Type"], "body": body}))
                self._reply(*fake.patch(self.path, body))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeKube:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def path_of(self, obj: dict[str, Any]) -> str:
        namespace = obj["metadata"].get("namespace", self.namespace)
        base = _COLLECTIONS[(obj["apiVersion"], obj["kind"])].format(ns=namespace)
        return f"{base}/{obj['metadata']['name']}"

    def _store(self, obj: dict[str, Any]) -> None:
        obj["metadata"].setdefault("namespace", self.namespace)
        obj["metadata"].setdefault("uid", f"uid-{len(self.objects)}")
        self.objects[self.path_of(obj)] = obj

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        path, _, query = path.partition("?")
        if path in _collection_paths(self.namespace):
            return 200, self._list(path, query)
        if path not in self.objects:
            return 404, _status(404, "NotFound", f"{path} not found")
        obj = self.objects[path]
        if obj["kind"] == "Job":
            obj["status"] = self.job_statuses[min(self._job_reads, len(self.job_statuses) - 1)]
            self._job_reads += 1
        return 200, obj

    def _list(self, collection: str, query: str) -> dict[str, Any]:
        """List with `labelSelector=k=v,k=v` (equality only, what the client sends here)."""
        wanted: dict[str, str] = {}
        for key, value in parse_qsl(query):
            if key == "labelSelector":
                wanted = dict(term.split("=", 1) for term in value.split(","))
        items = [copy.deepcopy(o) for p, o in self.objects.items() if p.rsplit("/", 1)[0] == collection
                 and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())]
        return {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items}

    def create(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        target = f"{path.split('?')[0]}/{body['metadata']['name']}"
        if target in self.objects:
            return 409, _status(409, "AlreadyExists", f"{body['kind']} {body['metadata']['name']} already exists")
        self._store(copy.deepcopy(body))
        return 201, self.objects[target]

    def patch(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        path = path.split("?")[0]
        if path not in self.objects:
            return 404, _status(404, "NotFound", f"{path} not found")
        _merge(self.objects[path], body)
        return 200, self.objects[path]
