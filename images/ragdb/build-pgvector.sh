#!/usr/bin/env bash
# Builds pgvector from a verified source tree with explicit compiler flags, installs it under DESTDIR, and
# scans the built vector.so for AVX-512 instructions. This one script is used by `make setup` (private
# PostgreSQL root), by the tests (negative-control builds) and by the Containerfile's builder stage.
#
# Usage: build-pgvector.sh --src DIR --destdir DIR [--optflags FLAGS] [--cppflags FLAGS]
#                          [--allowlist FILE] [--no-scan] [--pg-config PATH] [--workdir DIR]
#   --optflags   pgvector's OPTFLAGS (default: empty = portable x86-64 baseline; upstream's default is
#                -march=native, which bakes the build host's AVX-512 into every function)
#   --cppflags   extra preprocessor flags, e.g. -DDISABLE_DISPATCH
#   --allowlist  functions allowed to hold AVX-512 (default: avx512-allowlist.txt beside this script);
#                pass /dev/null to allow none
#   --no-scan    skip the scan (negative-control builds, which are expected to contain AVX-512)
# Env: SCANNER (command that runs the scanner; default `python3 -m ragfr_tools.build.avx512_scan` with
#      PYTHONPATH set to this repository's tools/), PG_CONFIG.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="" destdir="" optflags="" cppflags="" allowlist="$here/avx512-allowlist.txt" scan=1 workdir=""
pg_config="${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --src) src="$2"; shift 2 ;;
    --destdir) destdir="$2"; shift 2 ;;
    --optflags) optflags="$2"; shift 2 ;;
    --cppflags) cppflags="$2"; shift 2 ;;
    --allowlist) allowlist="$2"; shift 2 ;;
    --no-scan) scan=0; shift ;;
    --pg-config) pg_config="$2"; shift 2 ;;
    --workdir) workdir="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "build-pgvector: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n "$src" && -f "$src/Makefile" ]] || { echo "build-pgvector: --src must be a pgvector source tree" >&2; exit 2; }
[[ -n "$destdir" ]] || { echo "build-pgvector: --destdir is required" >&2; exit 2; }
[[ -x "$pg_config" ]] || { echo "build-pgvector: pg_config not found at $pg_config (install postgresql-server-dev-15)" >&2; exit 2; }

# Build in a private copy so several flag sets can be built from one verified tree without `make clean` races.
work="${workdir:-$(mktemp -d)}"
rm -rf "$work/src"; mkdir -p "$work"; cp -a "$src" "$work/src"
jobs="$(nproc 2>/dev/null || echo 1)"
echo "build-pgvector: OPTFLAGS='$optflags' PG_CPPFLAGS='$cppflags' pg_config=$pg_config"
make -s -C "$work/src" -j"$jobs" PG_CONFIG="$pg_config" OPTFLAGS="$optflags" PG_CPPFLAGS="$cppflags" >"$work/build.log" 2>&1 \
  || { tail -20 "$work/build.log" >&2; echo "build-pgvector: compile failed (log $work/build.log)" >&2; exit 1; }
make -s -C "$work/src" PG_CONFIG="$pg_config" OPTFLAGS="$optflags" PG_CPPFLAGS="$cppflags" DESTDIR="$destdir" install \
  >>"$work/build.log" 2>&1 || { tail -20 "$work/build.log" >&2; echo "build-pgvector: install failed" >&2; exit 1; }

so="$destdir$("$pg_config" --pkglibdir)/vector.so"
[[ -f "$so" ]] || { echo "build-pgvector: $so was not installed" >&2; exit 1; }
if [[ $scan == 1 ]]; then
  if [[ -z "${SCANNER:-}" ]]; then
    export PYTHONPATH="$here/../../tools${PYTHONPATH:+:$PYTHONPATH}"
    SCANNER="python3 -m ragfr_tools.build.avx512_scan"
  fi
  # shellcheck disable=SC2086  # SCANNER is a command line by design
  $SCANNER --allowlist "$allowlist" "$so"
fi
echo "build-pgvector: installed $so"
