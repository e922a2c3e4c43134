#!/usr/bin/env bash
# Builds the owui-init image with podman; prints its tag as the last line.
#   images/owui-init/build.sh [--base IMAGE] [--tag TAG] [--context-only]
# --context-only assembles .build/owui-init-context (what the image copies) and stops: no download, no build.
# --base defaults to the Containerfile's python:3.11-slim-bookworm; with no registry (this build machine),
# pass the project's Debian 12 minbase: --base localhost/ragfr-bookworm-minbase:1 (made by
# `scripts/build-image.sh --local-base`).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs --events-backend file)
base="" tag="" context_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --base) base="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --context-only) context_only=1; shift ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "owui-init build: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
ctx="$ROOT/.build/owui-init-context"
rm -rf "$ctx"; mkdir -p "$ctx/patches"
cp "$ROOT/images/owui-init/Containerfile" "$ROOT/images/owui-init/site-requirements.txt" "$ctx/"
# -h: src/ragfr/migrations is a link to the repository's migrations/; the image needs the files themselves.
(cd "$ROOT/src" && tar --exclude=__pycache__ -chf - ragfr) | tar -C "$ctx" -xf -
cp -R "$ROOT/patches/open-webui" "$ctx/patches/"
if [[ $context_only == 1 ]]; then echo "$ctx"; exit 0; fi
# Wheels for CPython 3.11 / manylinux x86-64 (the stock image's), fetched by the host's pip. Every pin of
# site-requirements.txt carries its --hash, so pip checks each download here, and the image's install again.
"${PIP:-$ROOT/.venv/bin/pip}" download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.11 --platform manylinux2014_x86_64 --implementation cp \
  -d "$ctx/wheels" -r "$ROOT/images/owui-init/site-requirements.txt" >&2
tag="${tag:-localhost/ragfr-owui-init:$( (cd "$ctx" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-12)}"
"${PODMAN[@]}" build ${base:+--build-arg BASE="$base"} -t "$tag" -f "$ctx/Containerfile" "$ctx" >&2
echo "$tag"
