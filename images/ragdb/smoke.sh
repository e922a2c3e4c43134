#!/bin/sh
# Smoke test run INSIDE the ragdb image: a throwaway cluster, then smoke.sql (1024-dim vectors: every distance
# operator, HNSW build, filtered iterative scan). With SMOKE_EXEC_PREFIX (e.g. "/qemu -cpu Skylake-Client",
# a static qemu-x86_64 mounted into the container) the postmaster runs on that emulated CPU.
# Exit 0 and a last line "ragdb smoke: OK" on success; non-zero with the server log tail otherwise.
set -eu
PG_MAJOR="${PG_MAJOR:-15}"
BIN="/usr/lib/postgresql/$PG_MAJOR/bin"
here="$(dirname "$0")"
dir="$(mktemp -d)"; chown postgres "$dir"
runuser -u postgres -- "$BIN/initdb" -D "$dir/data" -A trust -U postgres >/dev/null
# shellcheck disable=SC2086  # the prefix is a command line
runuser -u postgres -- ${SMOKE_EXEC_PREFIX:-} "$BIN/postgres" -D "$dir/data" -k "$dir" -c listen_addresses= \
  >"$dir/log" 2>&1 &
i=0
until "$BIN/pg_isready" -q -h "$dir"; do
  i=$((i + 1)); [ "$i" -lt 300 ] || { tail -20 "$dir/log"; echo "ragdb smoke: server did not start" >&2; exit 1; }
  sleep 1
done
status=0
"$BIN/psql" -h "$dir" -U postgres -X -q -v ON_ERROR_STOP=1 -f "$here/smoke.sql" || status=$?
if grep -q "signal 4\|Illegal instruction" "$dir/log"; then
  echo "ragdb smoke: SIGILL (illegal instruction) in the server log:" >&2; tail -5 "$dir/log" >&2; status=132
fi
runuser -u postgres -- "$BIN/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
[ "$status" = 0 ] || { tail -10 "$dir/log" >&2; echo "ragdb smoke: FAILED ($status)" >&2; exit "$status"; }
echo "ragdb smoke: OK"
