"""Releases an upgrade can tell apart: the chart version, the image tags and a fingerprint of what ships, bound.

    python -m ragfr_tools.release check              exit 1 (one line) when what ships changed since the version in
                                                     charts/ragfr/Chart.yaml was recorded in charts/ragfr/release.json
    python -m ragfr_tools.release fingerprint        the fingerprint of what ships now
    python -m ragfr_tools.release bump X.Y.Z         Chart.yaml version + appVersion (so every ragfr image tag), the
                                                     package's version (pyproject.toml, ragfr.__version__) and
                                                     release.json: X.Y.Z must be newer; reminds to write CHANGELOG.md
    python -m ragfr_tools.release package DIR        `helm package` of the recorded release into DIR (refuses a
                                                     checkout whose content is not the recorded one)
    python -m ragfr_tools.release push REGISTRY [--plain-http] [--insecure-skip-tls-verify]
                                                     package, then `helm push` to oci://REGISTRY/charts: the chart is
                                                     REGISTRY/charts/ragfr:X.Y.Z (Helm's OCI media types)

What ships (`SHIPPED`): every file an image is built from or the chart packages. The images are tagged with the
chart's appVersion and nodes pull them IfNotPresent (or find them imported under that tag), so a content change
under an unchanged version would leave nodes on the old image and the migrations Job unchanged; `check` (run by
tests/packaging/test_release.py) stops such a change before main. Left out, because nothing shipped is made of
them: charts/ragfr/examples (the .helmignore keeps them out of the package), release.json itself, and the
version/appVersion lines of Chart.yaml (the bump changes them). Files are the checkout's tracked and untracked
but not ignored ones (as scripts/images.sh `inputs`), so a file not yet committed counts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = Path("charts/ragfr")
RECORD = CHART_DIR / "release.json"
# src: the ragfr image copies all of it (images/ragfr/build.sh), owui-init src/ragfr; images: the Containerfiles,
# locks and build scripts; scripts/build-image.sh: the ragdb image's recipe; pyproject.toml: the package's pins.
SHIPPED = ("migrations", "src", "patches", "images", "pyproject.toml", "scripts/build-image.sh", str(CHART_DIR))
NOT_SHIPPED = (str(CHART_DIR / "examples") + "/", str(RECORD))
VERSION_LINE = re.compile(r"^(version|appVersion):.*$", re.MULTILINE)
SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
PACKAGE_VERSION = (("pyproject.toml", r'^version = ".*"$', 'version = "{}"'),
                   ("src/ragfr/__init__.py", r'^__version__ = ".*"$', '__version__ = "{}"'))


class ReleaseError(Exception):
    """One line for the person running the command."""


def _files(root: Path, paths: tuple[str, ...]) -> list[str]:
    done = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z", "--", *paths],
                          capture_output=True, check=True)
    names = sorted({n for n in done.stdout.decode().split("\0") if n})
    # A listed file deleted in the work tree is gone from what ships.
    return [n for n in names if not n.startswith(NOT_SHIPPED) and ((root / n).is_symlink() or (root / n).is_file())]


def _digest(root: Path, paths: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for name in _files(root, paths):
        path = root / name
        if path.is_symlink():
            # src/ragfr/migrations -> migrations: the link itself, its target is hashed where it lives.
            data = b"link:" + str(path.readlink()).encode()
        else:
            data = path.read_bytes()
            if name == str(CHART_DIR / "Chart.yaml"):
                data = VERSION_LINE.sub("", data.decode()).encode()
        h.update(name.encode() + b"\0" + hashlib.sha256(data).hexdigest().encode() + b"\n")
    return "sha256:" + h.hexdigest()


def fingerprint(root: Path = ROOT) -> str:
    """sha256 over the path and content of every shipped file."""
    return _digest(root, SHIPPED)


def chart_versions(root: Path = ROOT) -> tuple[str, str]:
    text = (root / CHART_DIR / "Chart.yaml").read_text()
    found = dict(re.findall(r"^(version|appVersion):\s*\"?([^\"\s]+)\"?\s*$", text, re.MULTILINE))
    return found.get("version", ""), found.get("appVersion", "")


def recorded(root: Path = ROOT) -> dict[str, str]:
    path = root / RECORD
    if not path.exists():
        raise ReleaseError(f"{RECORD} is missing: run make release VERSION=x.y.z")
    data = json.loads(path.read_text())
    return {k: str(v) for k, v in data.items()}


def check(root: Path = ROOT) -> None:
    version, app_version = chart_versions(root)
    record = recorded(root)
    if version != app_version:
        raise ReleaseError(f"Chart.yaml version {version} and appVersion {app_version} differ: the images are "
                           f"tagged with appVersion, one number names the release (make release VERSION=x.y.z)")
    if record.get("version") != version:
        raise ReleaseError(f"{RECORD} records {record.get('version')}, Chart.yaml says {version}: "
                           f"bump with make release VERSION=x.y.z, never by hand")
    now = fingerprint(root)
    if record.get("fingerprint") != now:
        raise ReleaseError(f"what ships ({', '.join(SHIPPED)}) changed since {version} was recorded "
                           f"({record.get('fingerprint', '')[:19]} -> {now[:19]}): the images would keep the tag "
                           f"{version} and nodes the old images; run make release VERSION=<newer than {version}> "
                           f"and write its CHANGELOG.md section")


def _semver(text: str) -> tuple[int, int, int]:
    m = SEMVER.match(text)
    if not m:
        raise ReleaseError(f"{text!r} is not a version X.Y.Z")
    return int(m[1]), int(m[2]), int(m[3])


def bump(new: str, root: Path = ROOT) -> list[str]:
    """Set the chart's version and appVersion to `new` and record what ships under it; the reminder lines."""
    old, _ = chart_versions(root)
    if _semver(new) <= _semver(old):
        raise ReleaseError(f"{new} is not newer than {old}: a release is never re-recorded under its own number "
                           f"(nodes already hold images tagged {old})")
    chart_yaml = root / CHART_DIR / "Chart.yaml"
    text = chart_yaml.read_text()
    text = re.sub(r"^version:.*$", f"version: {new}", text, count=1, flags=re.MULTILINE)
    text = re.sub(r"^appVersion:.*$", f'appVersion: "{new}"', text, count=1, flags=re.MULTILINE)
    chart_yaml.write_text(text)
    # The package the ragfr and owui-init images install says the same version (`ragfr --version` in a pod is
    # the release's: tests/images/test_images.py checks it in the imported image).
    for path, pattern, line in PACKAGE_VERSION:
        target = root / path
        target.write_text(re.sub(pattern, line.format(new), target.read_text(), count=1, flags=re.MULTILINE))
    (root / RECORD).write_text(json.dumps({"version": new, "fingerprint": fingerprint(root)}, indent=2) + "\n")
    notes = [f"release: {old} -> {new}: charts/ragfr/Chart.yaml version/appVersion, {RECORD} recorded"]
    changelog = root / "CHANGELOG.md"
    section = re.search(rf"^## {re.escape(new)}(\s.*)?$", changelog.read_text() if changelog.exists() else "",
                        re.MULTILINE)
    if not section or "unreleased" in (section[1] or "").lower():
        notes.append(f"release: now write the '## {new}' section of CHANGELOG.md (what changed, what to refit, "
                     f"what to re-import; no 'unreleased' in its heading); tests/packaging/test_release.py fails "
                     f"without it")
    notes.append("release: then make images (tags :" + new + "), make chart-golden, and commit Chart.yaml, "
                 f"{RECORD}, CHANGELOG.md and the golden files together")
    return notes


def package(dest: Path, root: Path = ROOT) -> Path:
    """`helm package` of the recorded release (Helm's own packager: .helmignore, Chart.yaml checks)."""
    import helm_python as helm

    check(root)
    dest.mkdir(parents=True, exist_ok=True)
    return Path(helm.package(root / CHART_DIR, destination=dest))


def push(registry: str, dest: Path, *, plain_http: bool = False, insecure: bool = False,
         root: Path = ROOT) -> tuple[str, str]:
    """Package, then push to oci://REGISTRY/charts; (reference, manifest digest)."""
    import helm_python as helm

    archive = package(dest, root)
    registry = registry.removeprefix("oci://").rstrip("/")
    helm.push(archive, f"oci://{registry}/charts", plain_http=plain_http, insecure_skip_tls_verify=insecure)
    version, _ = chart_versions(root)
    return f"{registry}/charts/ragfr:{version}", manifest_digest(registry, "charts/ragfr", version,
                                                                 plain_http=plain_http, insecure=insecure)


def manifest_digest(registry: str, repository: str, tag: str, *, plain_http: bool = False,
                    insecure: bool = False) -> str:
    """The registry's digest of the pushed manifest (what an operator pins, what Argo CD's targetRevision may name);
    helm's push reports none through the library. Anonymous access only: a registry that wants a login is reached
    by `helm push` itself with the operator's credentials."""
    import ssl
    import urllib.request

    request = urllib.request.Request(f"{'http' if plain_http else 'https'}://{registry}/v2/{repository}/manifests/{tag}",
                                     method="HEAD", headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
    context = ssl._create_unverified_context() if insecure else None
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as answer:
            return str(answer.headers.get("Docker-Content-Digest", ""))
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ragfr_tools.release", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("check")
    sub.add_parser("fingerprint")
    b = sub.add_parser("bump")
    b.add_argument("version")
    p = sub.add_parser("package")
    p.add_argument("dir", type=Path)
    u = sub.add_parser("push")
    u.add_argument("registry")
    u.add_argument("--dir", type=Path, default=ROOT / ".build" / "chart")
    u.add_argument("--plain-http", action="store_true")
    u.add_argument("--insecure-skip-tls-verify", action="store_true")
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            check()
            print(f"release: {chart_versions()[0]} is what ships")
        elif args.command == "fingerprint":
            print(fingerprint())
        elif args.command == "bump":
            print("\n".join(bump(args.version)))
        elif args.command == "package":
            print(package(args.dir))
        else:
            ref, digest = push(args.registry, args.dir, plain_http=args.plain_http,
                               insecure=args.insecure_skip_tls_verify)
            print(f"{ref} {digest}".strip())
    except ReleaseError as e:
        print(f"release: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
