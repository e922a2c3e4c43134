#!/usr/bin/env bash
# Builds the ragdb image (images/ragdb/Containerfile) with podman and prints its tag as the last line.
#
# Usage: scripts/build-image.sh [--base IMAGE | --local-base] [--apt-target SUITE] [--tag TAG]
#   --base IMAGE   base for both stages (default: the Containerfile's, docker.io/library/postgres:15-bookworm)
#   --local-base   use a Debian 12 minbase made here with debootstrap + podman import (no registry needed);
#                  implies --apt-target bookworm
#   --tag TAG      default: localhost/ragdb:<hash of the build inputs>; an existing image with it is reused
# The build context is a staged folder (.build/image-context) holding only what the Containerfile copies.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
BUILD="${BUILD:-$ROOT/.build}"
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs --events-backend file)
LOCAL_BASE_TAG="localhost/ragfr-bookworm-minbase:1"
base="" apt_target="" tag=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --base) base="$2"; shift 2 ;;
    --local-base) base="$LOCAL_BASE_TAG"; apt_target="bookworm"; shift ;;
    --apt-target) apt_target="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "build-image: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
command -v podman >/dev/null || { echo "build-image: podman not installed (make setup-apt)" >&2; exit 3; }

if [[ "$base" == "$LOCAL_BASE_TAG" ]] && ! "${PODMAN[@]}" image exists "$LOCAL_BASE_TAG"; then
  command -v debootstrap >/dev/null || { echo "build-image: debootstrap not installed (make setup-apt)" >&2; exit 3; }
  rootfs="$BUILD/debootstrap-bookworm"
  rm -rf "$rootfs"
  echo "build-image: debootstrap --variant=minbase bookworm (about 30 s)" >&2
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$BUILD/debootstrap.log" 2>&1 \
    || { tail -5 "$BUILD/debootstrap.log" >&2; echo "build-image: debootstrap failed" >&2; exit 3; }
  tar -C "$rootfs" -c . | "${PODMAN[@]}" import - "$LOCAL_BASE_TAG" >/dev/null
  rm -rf "$rootfs"
fi

ctx="$BUILD/image-context"
rm -rf "$ctx"; mkdir -p "$ctx"
cp "$ROOT"/images/ragdb/{Containerfile,pgvector.lock,fetch-pgvector.sh,build-pgvector.sh,avx512-allowlist.txt} "$ctx/"
cp "$ROOT"/images/ragdb/{apt-trixie-src.sources,initdb-extensions.sql,smoke.sh,smoke.sql,docker-entrypoint.sh} "$ctx/"
cp "$ROOT/tools/ragfr_tools/build/avx512_scan.py" "$ctx/"
key="$( (cd "$ctx" && cat ./*; echo "$base $apt_target") | sha256sum | cut -c1-12)"
tag="${tag:-localhost/ragdb:$key}"
if "${PODMAN[@]}" image exists "$tag"; then
  echo "build-image: reusing $tag" >&2
else
  args=(build --network host --ulimit nofile=20000:20000 -f "$ctx/Containerfile" -t "$tag")
  [[ -n "$base" ]] && args+=(--build-arg "BASE=$base")
  [[ -n "$apt_target" ]] && args+=(--build-arg "APT_TARGET=$apt_target")
  echo "build-image: podman ${args[*]} $ctx" >&2
  "${PODMAN[@]}" "${args[@]}" "$ctx" >"$BUILD/image-build.log" 2>&1 \
    || { tail -25 "$BUILD/image-build.log" >&2; echo "build-image: podman build failed (log $BUILD/image-build.log)" >&2; exit 1; }
  if [[ "$tag" == localhost/ragdb:* ]]; then
    # Input-hash tags pile up (~700 MB each) as the scripts change: keep only the newest.
    "${PODMAN[@]}" images --format '{{.Repository}}:{{.Tag}}' localhost/ragdb | grep -vxF "$tag" \
      | xargs -r "${PODMAN[@]}" rmi >/dev/null 2>&1 || true
  fi
fi
echo "$tag"
