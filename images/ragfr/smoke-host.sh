#!/usr/bin/env bash
# Runs the ragfr image's smoke test (images/ragfr/smoke.sh) the way the chart's pods run the image (uid 65532,
# read-only root filesystem, every capability dropped, no privilege escalation, HOME=/tmp on a scratch /tmp)
# against a fresh database of the private PostgreSQL (scripts/pg.sh, started if needed).
# Usage: images/ragfr/smoke-host.sh IMAGE
set -euo pipefail
ROOT="${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}"
IMAGE="${1:?usage: smoke-host.sh IMAGE}"
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs --events-backend file)
PSQL="${RAGFR_PGROOT:-$ROOT/.build/pgroot}/usr/lib/postgresql/15/bin/psql"
DB=ragfr_image_smoke
admin="$(bash "$ROOT/scripts/pg.sh" start | tail -1)"; admin="${admin#DATABASE_URL=}"
"$PSQL" "$admin" -qX -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
tmp="$(mktemp -d)"; chmod 1777 "$tmp"
trap '"$PSQL" "$admin" -qX -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
# --network host: the private cluster listens on 127.0.0.1 only.
"${PODMAN[@]}" run --rm --network host --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
  --user 65532:65532 --read-only --read-only-tmpfs=false --cap-drop ALL --security-opt no-new-privileges \
  -v "$tmp:/tmp" -e HOME=/tmp -e DATABASE_URL="${admin%/*}/$DB" "$IMAGE" /usr/local/share/ragfr/smoke.sh
