"""Rewrite the `--hash=sha256:...` options of a pinned requirements file from the package index's digests.

The images install their Python dependencies with `pip install --require-hashes` (images/ragfr/Containerfile,
images/owui-init/Containerfile): pip then refuses any file whose SHA-256 is not listed next to its pin, and any
dependency that has no pin. This tool writes those lists. For each `name==version` line it asks the index
(PEP 691 JSON, https://pypi.org/simple/NAME/ by default: the same digests PyPI's JSON API shows) for the files
of that release and keeps the SHA-256 of every WHEEL that pip could install on the images' platform: CPython
3.11 on manylinux x86-64 up to glibc 2.36 (Debian 12), pure-Python wheels included. Left out on purpose:
- sdists: the builds download with `--only-binary=:all:`, and an sdist runs its own build code when installed;
  with no sdist hash listed, pip in hash mode refuses to fall back to one;
- wheels for other interpreters, platforms or architectures: the images never install them, and every listed
  hash is one more file pip would accept.
Several wheels can fit one platform (manylinux2014 and manylinux_2_28 builds of the same release): all are
listed, because the host pip (scripts/setup-owui.sh, glibc 2.36) and the image builds (build.sh's --platform)
do not pick the same one.

Comments and blank lines are kept. A requirement line must be `name==version` with optional `--hash` options
(which are replaced); anything else (ranges, extras, markers, URLs) is refused: an image lock pins files.
A yanked release or a pin with no fitting wheel is an error and the file is left as it was.

    python -m ragfr_tools.build.lockhash images/ragfr/requirements.lock images/owui-init/site-requirements.txt
    python -m ragfr_tools.build.lockhash --check images/ragfr/requirements.lock   # exit 1 if out of date
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_INDEX = "https://pypi.org/simple"
PEP691_JSON = "application/vnd.pypi.simple.v1+json"
_PIN_RE = re.compile(r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==(?P<version>[A-Za-z0-9._+!-]+)$")
_HASH_RE = re.compile(r"^--hash[= ]sha256:(?P<digest>[0-9a-f]{64})$")

# One project's files on the index: [{"filename": ..., "hashes": {"sha256": ...}, "yanked": ...}, ...]
IndexFiles = list[dict[str, object]]
Fetch = Callable[[str], IndexFiles]


class LockError(Exception):
    """A requirements file this tool cannot rewrite, or an index answer it cannot use."""


class PinError(LockError):
    """A pin the index cannot back: its release is yanked, or has no wheel for the target."""


class LockProblems(LockError):
    """Every problem of one file (rehash goes through all pins before it gives up)."""

    def __init__(self, problems: list[str], only_pins: bool) -> None:
        super().__init__("\n".join(problems))
        self.only_pins = only_pins


def canonical(name: str) -> str:
    """PEP 503 normalised project name (what the index and wheel file names use)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Pin:
    """One `name==version` requirement and its hashes, as written (the name keeps its spelling)."""

    name: str
    version: str
    hashes: tuple[str, ...] = ()
    line: int = 0  # 1-based line where the requirement starts


@dataclass(frozen=True)
class Target:
    """The platform whose wheels are hashed: CPython major.minor on manylinux up to glibc 2.glibc_minor."""

    python: tuple[int, int] = (3, 11)
    glibc_minor: int = 36
    arch: str = "x86_64"
    platforms: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        plats = {"any"}
        legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
        for minor in range(self.glibc_minor, 4, -1):
            plats.add(f"manylinux_2_{minor}_{self.arch}")
            if minor in legacy:
                plats.add(f"{legacy[minor]}_{self.arch}")
        object.__setattr__(self, "platforms", frozenset(plats))

    def describe(self) -> str:
        major, minor = self.python
        return f"CPython {major}.{minor}, manylinux {self.arch} up to glibc 2.{self.glibc_minor}"

    def accepts(self, python_tag: str, abi_tag: str, platform_tag: str) -> bool:
        """True when pip on this target could install a wheel tagged python_tag-abi_tag-platform_tag (each
        possibly a compressed `a.b` set, as in `py2.py3-none-any`)."""
        major, minor = self.python
        cp = f"cp{major}{minor}"
        for py in python_tag.split("."):
            for abi in abi_tag.split("."):
                for plat in platform_tag.split("."):
                    if plat not in self.platforms:
                        continue
                    if py == cp and abi in (cp, "abi3", "none"):
                        return True
                    # The stable ABI: a cp3X-abi3 wheel runs on every CPython 3.Y with Y >= X.
                    if abi == "abi3" and re.fullmatch(rf"cp{major}\d+", py) and int(py[3:]) <= minor:
                        return True
                    # Pure Python: py3, py311, py310, ... (never a newer minor than the target's).
                    if abi == "none" and (py == f"py{major}" or (
                            re.fullmatch(rf"py{major}\d+", py) and int(py[3:]) <= minor)):
                        return True
        return False


def wheel_tags(filename: str) -> tuple[str, str, str, str, str] | None:
    """(canonical name, version, python tag, abi tag, platform tag) of a wheel file name; None if not a wheel."""
    if not filename.endswith(".whl"):
        return None
    parts = filename[: -len(".whl")].split("-")
    if len(parts) not in (5, 6):  # name-version[-build]-python-abi-platform
        return None
    return canonical(parts[0]), parts[1], parts[-3], parts[-2], parts[-1]


def same_version(a: str, b: str) -> bool:
    # Wheel names carry the normalised version; pins here are written the same way (no leading v, no epoch).
    return a.lower().replace("_", "-") == b.lower().replace("_", "-")


# --- the requirements file -----------------------------------------------------------------------------------

Item = Pin | str  # a requirement, or a comment/blank line kept verbatim


def parse(text: str, source: str = "<text>") -> list[Item]:
    """Requirements text as items; continuation lines (ending in a backslash) are joined."""
    items: list[Item] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        raw = lines[i]
        if not raw.strip() or raw.lstrip().startswith("#"):
            items.append(raw)
            i += 1
            continue
        logical = raw
        while logical.rstrip().endswith("\\"):
            i += 1
            if i >= len(lines):
                raise LockError(f"{source}:{start + 1}: a continuation line is missing at the end of the file")
            logical = logical.rstrip()[:-1] + " " + lines[i]
        i += 1
        if "#" in logical:
            raise LockError(f"{source}:{start + 1}: a comment after a requirement; put it on its own line")
        words = logical.split()
        m = _PIN_RE.match(words[0])
        if not m:
            raise LockError(f"{source}:{start + 1}: {words[0]!r} is not `name==version` (an image lock pins files)")
        hashes = []
        rest = words[1:]
        while rest:
            option = rest.pop(0)
            if option == "--hash" and rest:  # `--hash sha256:...`
                option = f"--hash={rest.pop(0)}"
            h = _HASH_RE.match(option)
            if not h:
                raise LockError(f"{source}:{start + 1}: {option!r}: only --hash=sha256:<64 hex> may follow a pin")
            hashes.append(h["digest"])
        items.append(Pin(m["name"], m["version"], tuple(hashes), start + 1))
    return items


def read_pins(path: Path) -> list[Pin]:
    """The requirements of a hashed requirements file (comments dropped)."""
    return [item for item in parse(path.read_text(encoding="utf-8"), str(path)) if isinstance(item, Pin)]


def render(items: Iterable[Item]) -> str:
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif not item.hashes:
            out.append(f"{item.name}=={item.version}")
        else:
            out.append(f"{item.name}=={item.version} \\")
            out.extend(f"    --hash=sha256:{d}" + (" \\" if k < len(item.hashes) - 1 else "")
                       for k, d in enumerate(item.hashes))
    return "\n".join(out) + "\n"


# --- the index -----------------------------------------------------------------------------------------------

def index_fetcher(index_url: str = DEFAULT_INDEX, timeout: float = 60) -> Fetch:
    """A function returning a project's files from a PEP 691 (JSON simple API) index."""
    def fetch(name: str) -> IndexFiles:
        url = f"{index_url.rstrip('/')}/{canonical(name)}/"
        request = urllib.request.Request(url, headers={"Accept": PEP691_JSON, "User-Agent": "ragfr-lockhash"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                kind = response.headers.get("Content-Type", "")
                body = response.read()
        except urllib.error.HTTPError as exc:
            raise LockError(f"{url}: HTTP {exc.code}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise LockError(f"{url}: {getattr(exc, 'reason', exc)}") from exc
        if not kind.startswith(PEP691_JSON):
            raise LockError(f"{url}: answered {kind or 'no content type'}, not PEP 691 JSON ({PEP691_JSON})")
        files = json.loads(body).get("files")
        if not isinstance(files, list):
            raise LockError(f"{url}: no `files` list in the answer")
        return files
    return fetch


def digests(pin: Pin, files: IndexFiles, target: Target) -> list[str]:
    """Sorted SHA-256 digests of the pin's wheels that fit the target; LockError if yanked or none fits."""
    found, seen_release = [], []
    for f in files:
        filename = str(f.get("filename", ""))
        tags = wheel_tags(filename)
        if tags is None or tags[0] != canonical(pin.name) or not same_version(tags[1], pin.version):
            continue
        seen_release.append(filename)
        if f.get("yanked"):
            reason = f["yanked"] if isinstance(f["yanked"], str) else "no reason given"
            raise PinError(f"{pin.name}=={pin.version} is yanked on the index ({reason}): pin another version")
        if target.accepts(*tags[2:]):
            hashes = f.get("hashes")
            sha = hashes.get("sha256") if isinstance(hashes, dict) else None
            if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
                raise LockError(f"{filename}: the index gives no sha256 digest")
            found.append(sha)
    if not found:
        what = ", ".join(seen_release) if seen_release else "no wheel of this release at all"
        raise PinError(f"{pin.name}=={pin.version}: no wheel for {target.describe()} ({what})")
    return sorted(set(found))


def rehash(text: str, fetch: Fetch, target: Target, source: str = "<text>") -> str:
    """The requirements text with every pin's hashes replaced by the index's; LockError lists every problem."""
    items = parse(text, source)
    problems: list[LockError] = []
    out: list[Item] = []
    for item in items:
        if isinstance(item, Pin):
            try:
                item = Pin(item.name, item.version, tuple(digests(item, fetch(item.name), target)), item.line)
            except LockError as exc:
                problems.append(type(exc)(f"{source}:{item.line}: {exc}"))
        out.append(item)
    if problems:
        raise LockProblems([str(p) for p in problems], all(isinstance(p, PinError) for p in problems))
    return render(out)


# --- command line --------------------------------------------------------------------------------------------

def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ragfr_tools.build.lockhash",
        description=(
            "Rewrite the --hash=sha256 options of `name==version` requirements files from the package\n"
            "index's digests: every wheel of the pinned release that pip could install on the target\n"
            "platform (default: CPython 3.11, manylinux x86_64 up to glibc 2.36, the images'). No sdists.\n"
            "Exit 0: written (or up to date with --check); 1: --check found a difference, or a pin is\n"
            "yanked or has no fitting wheel (the file is left as it was); 2: a line that is not\n"
            "`name==version` [--hash=sha256:...], a bad target, or the index could not be read."
        ),
        epilog=(
            "To bump a pin: edit its version (keep or drop its old --hash lines), run\n"
            "  .venv/bin/python -m ragfr_tools.build.lockhash images/ragfr/requirements.lock\n"
            "review `git diff` (one version changed, its hashes replaced, nothing else), then `make images`.\n"
            "A new dependency is a new `name==version` line; pip --require-hashes refuses to install any\n"
            "dependency the lock does not list, so a missing one fails the image build by name."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="+", type=Path, help="requirements files to rewrite in place")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if any file would change")
    p.add_argument("--index-url", default=DEFAULT_INDEX,
                   help=f"a PEP 691 JSON simple index (default: {DEFAULT_INDEX})")
    p.add_argument("--python", default="3.11", help="target CPython version, major.minor (default: 3.11)")
    p.add_argument("--glibc", default="2.36", help="newest glibc of the target, 2.N (default: 2.36, Debian 12)")
    p.add_argument("--arch", default="x86_64", help="target architecture (default: x86_64)")
    return p


def _target(args: argparse.Namespace) -> Target:
    py = re.fullmatch(r"(\d+)\.(\d+)", args.python)
    glibc = re.fullmatch(r"2\.(\d+)", args.glibc)
    if not py or not glibc or not re.fullmatch(r"[a-z0-9_]+", args.arch):
        raise LockError(f"bad target: --python {args.python} --glibc {args.glibc} --arch {args.arch}")
    return Target((int(py[1]), int(py[2])), int(glibc[1]), args.arch)


def main(argv: Sequence[str] | None = None, fetch: Fetch | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        target = _target(args)
        fetch = fetch or index_fetcher(args.index_url)
        texts = {path: path.read_text(encoding="utf-8") for path in args.files}
    except (LockError, OSError) as exc:
        print(f"lockhash: {exc}", file=sys.stderr)
        return 2
    status = 0
    for path, text in texts.items():
        try:
            new = rehash(text, fetch, target, str(path))
        except LockError as exc:
            print(f"lockhash: {exc}\nlockhash: {path}: left as it was", file=sys.stderr)
            status = max(status, 1 if isinstance(exc, LockProblems) and exc.only_pins else 2)
            continue
        pins = sum(isinstance(i, Pin) for i in parse(new))
        if new == text:
            print(f"lockhash: {path}: up to date ({pins} pins)")
        elif args.check:
            print(f"lockhash: {path}: OUT OF DATE (run without --check to rewrite it)", file=sys.stderr)
            status = max(status, 1)
        else:
            path.write_text(new, encoding="utf-8")
            print(f"lockhash: {path}: rewritten ({pins} pins)")
    return status


if __name__ == "__main__":
    sys.exit(main())
