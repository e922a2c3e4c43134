#!/bin/sh
# Blocks until PostgreSQL accepts a real query as the configured role (not just a TCP connection),
# polling every 2 s; fails with one clear line after WAIT_TIMEOUT_SECONDS. libpq reads PG* from the env.
set -eu
timeout="${WAIT_TIMEOUT_SECONDS:-600}"
deadline=$(( $(date +%s) + timeout ))
until psql -XtAc 'SELECT 1' >/dev/null 2>&1; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "wait-for-postgres: $PGUSER@$PGHOST:$PGPORT/$PGDATABASE not usable after ${timeout}s:" >&2
    psql -XtAc 'SELECT 1' 2>&1 | head -n 3 >&2 || true
    exit 1
  fi
  sleep 2
done
echo "wait-for-postgres: $PGUSER@$PGHOST:$PGPORT/$PGDATABASE is up"
