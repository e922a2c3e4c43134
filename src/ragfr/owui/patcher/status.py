"""Is the patch active? Reads the markers of the files Open WebUI will import; imports nothing of it.

Meant for `ragfr owui check` in a readiness probe: cheap (reads two files), and it names the patch
and Open WebUI versions, or says exactly which file is pristine, modified or missing.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ragfr.errors import ConfigError
from ragfr.owui.patcher import marker
from ragfr.owui.patcher.manifest import Manifest

# patched: by this patch for this version; pristine: unpatched stock file; modified: neither; tampered: marker
# present but the text under it changed; other-patch: another patch or Open WebUI version.
FileState = Literal["patched", "pristine", "modified", "missing", "other-patch", "tampered"]


@dataclass(frozen=True)
class FileStatus:
    path: str
    state: FileState
    detail: str = ""


@dataclass(frozen=True)
class CheckReport:
    target: Path
    patch_version: str
    owui_version: str
    files: tuple[FileStatus, ...]

    @property
    def active(self) -> bool:
        return all(f.state == "patched" for f in self.files)


def locate_open_webui() -> Path:
    """The directory holding `open_webui/` on this interpreter's import path (without importing it)."""
    spec = importlib.util.find_spec("open_webui")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "open_webui is not importable here: pass --open-webui-dir DIR (the directory holding open_webui/)"
        )
    return Path(next(iter(spec.submodule_search_locations))).parent


def _file_status(root: Path, rel: str, pristine_sha: str, manifest: Manifest) -> FileStatus:
    path = root / rel
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return FileStatus(rel, "missing")
    text = raw.decode("utf-8", errors="replace")
    found, body = marker.read(text)
    if found is None:
        if hashlib.sha256(raw).hexdigest() == pristine_sha:
            return FileStatus(rel, "pristine", f"unpatched open-webui {manifest.owui_version}")
        return FileStatus(rel, "modified", f"neither pristine open-webui {manifest.owui_version} nor patched")
    if not marker.intact(found, body):
        return FileStatus(rel, "tampered", "marker present but the text under it changed")
    if (found.patch_version, found.owui_version) != (manifest.patch_version, manifest.owui_version):
        return FileStatus(rel, "other-patch", f"patch {found.patch_version} for open-webui {found.owui_version}")
    return FileStatus(rel, "patched", f"patch {found.patch_version} for open-webui {found.owui_version}")


def check(root: Path, manifest: Manifest) -> CheckReport:
    statuses = tuple(_file_status(root, f.path, f.sha256, manifest) for f in manifest.files)
    return CheckReport(root, manifest.patch_version, manifest.owui_version, statuses)
