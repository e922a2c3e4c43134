"""Apply the manifest's edits to an Open WebUI tree: all files or none, atomically, compiled first.

Order of work: every file is read, verified (pristine SHA-256, or an intact marker of this very patch)
and edited in memory, and the result is compiled; only when every file passed are temporary files
written beside the originals and renamed over them. A refusal therefore leaves the tree byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ragfr.owui.patcher import marker
from ragfr.owui.patcher.edits import AnchorProblem, apply_edits, find_problems
from ragfr.owui.patcher.errors import PatchError
from ragfr.owui.patcher.manifest import FileSpec, Manifest


@dataclass(frozen=True)
class FileOutcome:
    path: str
    state: Literal["patched", "already patched"]
    edits: int


@dataclass(frozen=True)
class _Planned:
    spec: FileSpec
    target: Path
    text: str | None  # None: already patched, nothing to write


def detect_version(target: Path) -> str | None:
    """The Open WebUI version a tree claims: pip's dist-info, else the image's package.json."""
    for metadata in sorted(target.glob("open_webui-*.dist-info/METADATA")):
        for line in metadata.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    # The stock image keeps the backend in /app/backend and package.json in /app.
    for package_json in (target / "package.json", target.parent / "package.json"):
        try:
            version = json.loads(package_json.read_text(encoding="utf-8")).get("version")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(version, str):
            return version
    return None


def _expected(manifest: Manifest) -> str:
    return f"expected open-webui {manifest.owui_version} (ragfr-owui-patch {manifest.patch_version})"


def _anchor_message(spec: FileSpec, problems: list[AnchorProblem]) -> str:
    p = problems[0]
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"anchor {p.edit.id!r} in {p.edit.scope}: {p.reason}{more}"


def _plan(target_root: Path, spec: FileSpec, manifest: Manifest) -> _Planned:
    path = target_root / spec.path
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise PatchError(
            f"{spec.path}: not found under {target_root} (--target must contain open_webui/); "
            f"{_expected(manifest)}; nothing written"
        ) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PatchError(f"{spec.path}: not UTF-8 text; {_expected(manifest)}; nothing written") from exc

    found_marker, body = marker.read(text)
    if found_marker is not None:
        same_patch = (
            found_marker.patch_version == manifest.patch_version
            and found_marker.owui_version == manifest.owui_version
            and found_marker.pristine_sha256 == spec.sha256
        )
        if same_patch and marker.intact(found_marker, body):
            return _Planned(spec, path, None)
        raise PatchError(
            f"{spec.path}: carries a ragfr-owui-patch marker (patch {found_marker.patch_version} for "
            f"open-webui {found_marker.owui_version}) that does not verify; {_expected(manifest)}; "
            "start again from the pristine files; nothing written"
        )

    digest = hashlib.sha256(raw).hexdigest()
    if digest != spec.sha256:
        version = detect_version(target_root) or "unknown"
        problems = find_problems(text, spec.edits)
        why = _anchor_message(spec, problems) if problems else "its anchors still match but the file was modified"
        raise PatchError(
            f"{spec.path}: not the pristine file of open-webui {manifest.owui_version} "
            f"(sha256 {digest[:16]}..., target reports version {version}); {why}; {_expected(manifest)}; "
            "nothing written"
        )
    edited = apply_edits(text, spec.edits)
    if isinstance(edited, list):
        raise PatchError(f"{spec.path}: {_anchor_message(spec, edited)}; {_expected(manifest)}; nothing written")
    stamped = marker.stamp(
        edited, patch_version=manifest.patch_version, owui_version=manifest.owui_version, pristine_sha256=digest
    )
    try:
        compile(stamped, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise PatchError(
            f"{spec.path}: the patched file does not compile ({exc.msg}, line {exc.lineno}); "
            f"{_expected(manifest)}; nothing written"
        ) from exc
    return _Planned(spec, path, stamped)


def _write_atomically(plans: list[_Planned]) -> None:
    staged: list[tuple[str, Path]] = []
    try:
        for plan in plans:
            assert plan.text is not None
            fd, tmp = tempfile.mkstemp(prefix=f".{plan.target.name}.", suffix=".ragfr-tmp", dir=plan.target.parent)
            staged.append((tmp, plan.target))
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
                out.write(plan.text)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, plan.target.stat().st_mode & 0o7777)
    except OSError as exc:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise PatchError(f"cannot stage patched files: {exc}; nothing written") from exc
    for tmp, target in staged:
        os.replace(tmp, target)


def apply_patch(target_root: Path, manifest: Manifest) -> list[FileOutcome]:
    """Patch every manifest file under `target_root` (the directory holding `open_webui/`)."""
    if not target_root.is_dir():
        raise PatchError(f"--target {target_root} is not a directory; {_expected(manifest)}; nothing written")
    plans = [_plan(target_root, spec, manifest) for spec in manifest.files]
    _write_atomically([p for p in plans if p.text is not None])
    return [
        FileOutcome(p.spec.path, "already patched" if p.text is None else "patched", len(p.spec.edits)) for p in plans
    ]

