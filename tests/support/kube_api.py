"""A stand-in for a Kubernetes API server that answers only `GET /version`, for the tests of `make run` that
need a configured cluster which answers (no kube-apiserver can run here: ../shared/ENGINEERING-NOTES.md). `make
run` checks that the cluster answers before it builds, pushes or imports anything (scripts/run.sh); this one
answers that check and nothing else (404), so the deploy that follows fails at Helm's first real request, which
is what those tests want: they test what happens BEFORE the deploy (the push, the import) and its order."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = {"major": "1", "minor": "30", "gitVersion": "v1.30.0", "platform": "linux/amd64"}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(VERSION if self.path.split("?")[0] == "/version" else
                          {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}).encode()
        self.send_response(200 if self.path.split("?")[0] == "/version" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def version_only_api() -> Iterator[str]:
    """A kubeconfig (text) whose current context is a server on loopback answering only GET /version."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield (f"apiVersion: v1\nkind: Config\nclusters:\n- name: stub\n  cluster: {{server: "
               f"\"http://127.0.0.1:{server.server_port}\"}}\nusers:\n- name: u\n  user: {{token: not-a-secret}}\n"
               "contexts:\n- name: stub\n  context: {cluster: stub, user: u}\ncurrent-context: stub\n")
    finally:
        server.shutdown()
        server.server_close()
