#!/usr/bin/env bash
# Builds the private, relocatable PostgreSQL 15 root under .build/pgroot: a copy of the distribution's
# /usr/lib/postgresql/15 and /usr/share/postgresql/15 plus our pgvector build (installed with DESTDIR), so
# tests and `make db` never touch system paths. Skips all work when a stamp keyed on every input exists.
# Env: RAGFR_PGROOT (default .build/pgroot), PG_SYSTEM_LIB, PG_SYSTEM_SHARE.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
BUILD="${BUILD:-$ROOT/.build}"
PGROOT="${RAGFR_PGROOT:-$BUILD/pgroot}"
PG_LIB="${PG_SYSTEM_LIB:-/$PG_LIB_SUBDIR}"
PG_SHARE="${PG_SYSTEM_SHARE:-/$PG_SHARE_SUBDIR}"
IMG="$ROOT/images/ragdb"

[[ -x "$PG_LIB/bin/postgres" && -x "$PG_LIB/bin/pg_config" ]] \
  || { echo "pgroot: $PG_LIB lacks postgres/pg_config: run scripts/setup-apt.sh first" >&2; exit 1; }

pg_pkgs="$(dpkg-query -W -f='${Package}=${Version}\n' postgresql-15 postgresql-server-dev-15 2>/dev/null || true)"
key="$( { echo "$pg_pkgs"; echo "$PGROOT";
          cat "$IMG/pgvector.lock" "$IMG/fetch-pgvector.sh" "$IMG/build-pgvector.sh" "$IMG/avx512-allowlist.txt" \
              "$ROOT/tools/ragfr_tools/build/avx512_scan.py" "$0"; } | sha256sum | cut -c1-16)"
# Stamps are per target folder, so a second root (RAGFR_PGROOT) never invalidates the default one.
path_id="$(echo "$PGROOT" | sha256sum | cut -c1-8)"
stamp="$BUILD/stamps/pgroot-$path_id-$key"
if [[ -f "$stamp" && -x "$PGROOT/$PG_LIB_SUBDIR/bin/postgres" ]]; then
  echo "pgroot: up to date ($PGROOT, stamp $key)"
  exit 0
fi

export RAGFR_DOWNLOADS="${RAGFR_DOWNLOADS:-$BUILD/downloads}"
"$IMG/fetch-pgvector.sh" "$BUILD/pgvector-src"
# shellcheck source=/dev/null
. "$IMG/pgvector.lock"

staging="$PGROOT.staging"
rm -rf "$staging"
mkdir -p "$staging/usr/lib/postgresql" "$staging/usr/share/postgresql"
cp -a "$PG_LIB" "$staging/$PG_LIB_SUBDIR"
cp -a "$PG_SHARE" "$staging/$PG_SHARE_SUBDIR"
# The distribution's pg_config describes the system layout, which is what PGXS needs to compile against the
# installed headers; DESTDIR then redirects the install into the staging copy.
"$IMG/build-pgvector.sh" --src "$BUILD/pgvector-src/pgvector-$PGVECTOR_VERSION" --destdir "$staging" \
  --workdir "$BUILD/pgvector-build/portable" --pg-config "$PG_LIB/bin/pg_config"

# Prove relocation works before swapping in: the copied binaries must resolve their share dir to the copy.
got_share="$("$staging/$PG_LIB_SUBDIR/bin/pg_config" --sharedir)"
[[ "$got_share" == "$staging/$PG_SHARE_SUBDIR" ]] \
  || { echo "pgroot: relocated pg_config reports sharedir $got_share, expected $staging/$PG_SHARE_SUBDIR" >&2; exit 1; }
[[ -f "$staging/$PG_SHARE_SUBDIR/extension/vector.control" ]] || { echo "pgroot: vector.control missing" >&2; exit 1; }

rm -rf "$PGROOT"
mv "$staging" "$PGROOT"
# The cluster runs as an unprivileged user: the tree must be readable by others.
chmod -R a+rX "$PGROOT"
rm -f "$BUILD"/stamps/pgroot-"$path_id"-*
mkdir -p "$BUILD/stamps"; touch "$stamp"
echo "pgroot: built $PGROOT (pgvector $PGVECTOR_VERSION, OPTFLAGS='')"
