"""What an analyst does in Open WebUI, through its HTTP API: sign up, make a knowledge base, ask with it attached.

Used by the cluster smoke (against the chart's running Open WebUI pod) and the owui end-to-end tests (against
an Open WebUI process); the calls are the ones the browser makes.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from typing import Any

ADMIN = {"name": "Admin", "email": "admin@example.org", "password": "ragfr-e2e-Passw0rd!"}


class ApiError(RuntimeError):
    """Open WebUI answered with an HTTP error; the message has the method, URL, status and body."""


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
        raise ApiError(f"{method} {url} -> {err.code}: {err.read()[:2000]!r}") from err


def multipart(filename: str, content: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode() + content + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def sign_up_admin(url: str) -> str:
    """The first account of a fresh Open WebUI (it becomes admin); returns its token."""
    admin = call("POST", url + "/api/v1/auths/signup", ADMIN)
    if admin.get("role") != "admin":
        raise ApiError(f"the first sign-up on {url} is {admin.get('role')!r}, not admin")
    return str(admin["token"])


def knowledge_base(url: str, token: str, name: str, files: dict[str, str]) -> str:
    """A knowledge base holding `files` (name -> text), each uploaded and processed by Open WebUI; its id."""
    api = url + "/api/v1"
    kb = call("POST", api + "/knowledge/create", {"name": name, "description": name}, token)
    for filename, text in files.items():
        raw, ctype = multipart(filename, text.encode("utf-8"))
        uploaded = call("POST", api + "/files/?process=true&process_in_background=false", token=token, raw=raw,
                        content_type=ctype)
        call("POST", f"{api}/knowledge/{kb['id']}/file/add", {"file_id": uploaded["id"]}, token)
    return str(kb["id"])


def ask(url: str, token: str, model: str, question: str, kb_id: str, *, timeout: float = 300) -> dict[str, Any]:
    """One chat turn with the knowledge base attached (`#name` in the browser), not streamed."""
    reply: dict[str, Any] = call("POST", url + "/api/chat/completions", {
        "model": model,
        "stream": False,
        "messages": [{"role": "user", "content": question}],
        "files": [{"type": "collection", "id": kb_id}],
    }, token, timeout=timeout)
    return reply


def answer_text(reply: dict[str, Any]) -> str:
    return str(reply["choices"][0]["message"]["content"])


def passages(reply: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(text, metadata) of every source passage shown under the answer, in order."""
    return [(d, m) for s in reply.get("sources") or [] for d, m in zip(s["document"], s["metadata"], strict=True)]
