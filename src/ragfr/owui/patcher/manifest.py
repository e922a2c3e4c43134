"""The patch manifest: which Open WebUI version, which pristine files (SHA-256), which anchored edits.

Format (JSON, `patches/open-webui/manifest.json`):

    {"patch_version": "1", "open_webui_version": "0.12.4",
     "files": [{"path": "open_webui/...py", "sha256": "<pristine hex>",
                "edits": [{"id": "...", "kind": "replace_body", "scope": "Class.method",
                           "anchor": "<exact def line(s)>", "body": "bodies/x.py.in"},
                          {"id": "...", "kind": "replace_text", "scope": "function",
                           "anchor": "<exact text, once in scope>", "replacement": "..."}]}]}

`replace_body` keeps the function's signature (the anchor) and replaces everything under it; the body
file is written without indentation and indented to match the function.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ragfr.errors import ConfigError

ENV_MANIFEST = "RAGFR_OWUI_MANIFEST"
KINDS = ("replace_body", "replace_text")


@dataclass(frozen=True)
class Edit:
    id: str
    kind: str
    scope: str
    anchor: str
    replacement: str


@dataclass(frozen=True)
class FileSpec:
    path: str
    sha256: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Manifest:
    patch_version: str
    owui_version: str
    files: tuple[FileSpec, ...]
    source: Path


def default_path() -> Path:
    """$RAGFR_OWUI_MANIFEST; else the manifest shipped in the package (ragfr/owui/patcher/patch: package data in the
    wheel, copied with ragfr into the Open WebUI pod, a link to patches/open-webui in a checkout)."""
    env = os.environ.get(ENV_MANIFEST)
    if env:
        return Path(env)
    return Path(str(resources.files("ragfr.owui.patcher") / "patch" / "manifest.json"))


def load(path: Path | None = None) -> Manifest:
    path = path or default_path()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"patch manifest not found: {path} (set {ENV_MANIFEST} or pass --manifest)") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"patch manifest {path} is not valid JSON: {exc}") from exc
    try:
        files = tuple(_file(path.parent, f) for f in raw["files"])
        manifest = Manifest(str(raw["patch_version"]), str(raw["open_webui_version"]), files, path)
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"patch manifest {path} lacks a required field: {exc}") from exc
    if not manifest.files:
        raise ConfigError(f"patch manifest {path} lists no files")
    return manifest


def _file(base: Path, raw: dict[str, Any]) -> FileSpec:
    edits = tuple(_edit(base, e) for e in raw["edits"])
    sha = str(raw["sha256"]).lower()
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise ConfigError(f"patch manifest: {raw['path']}: sha256 must be 64 hex digits")
    return FileSpec(str(raw["path"]), sha, edits)


def _edit(base: Path, raw: dict[str, Any]) -> Edit:
    kind = str(raw["kind"])
    if kind not in KINDS:
        raise ConfigError(f"patch manifest: edit {raw.get('id')}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if kind == "replace_body":
        replacement = (base / str(raw["body"])).read_text(encoding="utf-8")
    else:
        replacement = str(raw["replacement"])
    return Edit(str(raw["id"]), kind, str(raw["scope"]), str(raw["anchor"]), replacement)
