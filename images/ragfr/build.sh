#!/usr/bin/env bash
# Builds the ragfr image (images/ragfr/Containerfile) with podman; prints its tag as the last line.
#   images/ragfr/build.sh [--base IMAGE] [--tag TAG]
# --base defaults to the Containerfile's python:3.11-slim-bookworm; with no registry (this build machine), pass
# the project's Debian 12 minbase: --base localhost/ragfr-bookworm-minbase:1 (made by scripts/build-image.sh
# --local-base). The wheels are fetched by the host's pip: ragfr's own, built from this checkout, and the pinned
# runtime dependencies of requirements.lock (CPython 3.11, manylinux x86-64), so the build itself needs no index.
# Every wheel is installed with pip --require-hashes: the lock's digests (PyPI's), and for ragfr's own wheel the
# digest this script writes into ragfr-wheel.txt. Bumping a pin: the header of requirements.lock.
# Default tag: localhost/ragfr/ragfr:<hash of the build context>; an existing image with that tag is reused.
set -euo pipefail
ROOT="${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}"
PIP="${PIP:-$ROOT/.venv/bin/pip}"
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs --events-backend file)
base="" tag=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --base) base="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "ragfr image build: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
ctx="$ROOT/.build/ragfr-image-context"
rm -rf "$ctx"; mkdir -p "$ctx/wheels"
cp "$ROOT"/images/ragfr/{Containerfile,requirements.lock,smoke.sh} "$ctx/"
# ragfr's wheel from a copy of the checkout (a build in place would leave build/ and *.egg-info in src/).
src="$ctx/src-copy"; mkdir -p "$src"
cp "$ROOT"/{pyproject.toml,README.md} "$src/"
(cd "$ROOT" && tar --exclude=__pycache__ -chf - src) | tar -C "$src" -xf -
# (This machine's pip.conf names local index folders that do not exist: their warnings are noise.)
quiet() { "$@" 2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; } >&2; }
quiet "$PIP" wheel -q --disable-pip-version-check --no-deps -w "$ctx/wheels" "$src"
rm -rf "$src"
# The Containerfile installs ragfr's wheel with --require-hashes too: the digest of the wheel just built.
whl=("$ctx"/wheels/ragfr-*.whl)
[[ ${#whl[@]} == 1 && -f "${whl[0]}" ]] || { echo "ragfr image build: not one ragfr wheel: ${whl[*]}" >&2; exit 1; }
version="$(basename "${whl[0]}" | cut -d- -f2)"
printf 'ragfr==%s --hash=sha256:%s\n' "$version" "$(sha256sum "${whl[0]}" | cut -d' ' -f1)" >"$ctx/ragfr-wheel.txt"
# requirements.lock holds a --hash for every pin, so this download already runs in pip's hash-checking mode:
# a file that is not the one PyPI published for the pin fails here, before the image build checks it again.
quiet "$PIP" download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.11 \
  --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --implementation cp \
  -d "$ctx/wheels" -r "$ctx/requirements.lock"
# (ragfr's wheel and its digest differ from build to build: the sources they are built from are hashed instead.)
tag="${tag:-localhost/ragfr/ragfr:$( (cd "$ctx" && find . -type f ! -name 'ragfr-*.whl' ! -name ragfr-wheel.txt \
  -print0 | sort -z | xargs -0 sha256sum; cd "$ROOT" && find -L src pyproject.toml -type f ! -path '*__pycache__*' \
  -print0 | sort -z | xargs -0 sha256sum; echo "$base") | sha256sum | cut -c1-12)}"
if "${PODMAN[@]}" image exists "$tag"; then
  echo "ragfr image build: reusing $tag" >&2
else
  "${PODMAN[@]}" build --network host ${base:+--build-arg BASE="$base"} -t "$tag" -f "$ctx/Containerfile" "$ctx" >&2
fi
echo "$tag"
