#!/usr/bin/env bash
# Usage: fetch-pgvector.sh OUTDIR
# Fetches pgvector's source from Debian's source package (needs a deb-src entry for a suite that carries
# the pinned version), verifies the upstream tarball against images/ragdb/pgvector.lock, and unpacks it as
# OUTDIR/pgvector-<version>. Fails closed: a checksum mismatch deletes the download and exits non-zero.
# Downloads are cached in $RAGFR_DOWNLOADS (default: OUTDIR/downloads).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: fetch-pgvector.sh OUTDIR}"
# shellcheck source=/dev/null
. "${PGVECTOR_LOCK:-$here/pgvector.lock}"

dl="${RAGFR_DOWNLOADS:-$out/downloads}"
mkdir -p "$dl" "$out"
tarball="$dl/$PGVECTOR_ORIG_TARBALL"

verify() { echo "$PGVECTOR_ORIG_SHA256  $1" | sha256sum -c --quiet - >/dev/null 2>&1; }

if [[ ! -f "$tarball" ]] || ! verify "$tarball"; then
  rm -f "$tarball"
  echo "fetch-pgvector: apt-get source --download-only pgvector=$PGVECTOR_DEBIAN_VERSION"
  # apt's _apt sandbox user cannot write into root-owned project folders; fetch into a world-writable tmp.
  tmp="$(mktemp -d)"; chmod 0777 "$tmp"
  if ! (cd "$tmp" && apt-get source -qq --download-only "pgvector=$PGVECTOR_DEBIAN_VERSION" >/dev/null 2>"$tmp/err"); then
    echo "fetch-pgvector: apt-get source failed (is a deb-src entry for trixie configured? run scripts/setup-apt.sh): $(tail -1 "$tmp/err")" >&2
    rm -rf "$tmp"; exit 1
  fi
  mv "$tmp/$PGVECTOR_ORIG_TARBALL" "$tarball"
  rm -rf "$tmp"
fi
if ! verify "$tarball"; then
  got="$(sha256sum "$tarball" | cut -d' ' -f1)"
  rm -f "$tarball"
  echo "fetch-pgvector: SHA-256 mismatch for $PGVECTOR_ORIG_TARBALL: got $got, pinned $PGVECTOR_ORIG_SHA256" >&2
  exit 1
fi
rm -rf "$out/pgvector-$PGVECTOR_VERSION"
tar -xzf "$tarball" -C "$out"
[[ -f "$out/pgvector-$PGVECTOR_VERSION/Makefile" ]] || { echo "fetch-pgvector: tarball lacks pgvector-$PGVECTOR_VERSION/Makefile" >&2; exit 1; }
echo "fetch-pgvector: verified $PGVECTOR_ORIG_TARBALL ($PGVECTOR_ORIG_SHA256) -> $out/pgvector-$PGVECTOR_VERSION"
