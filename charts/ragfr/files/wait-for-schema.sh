#!/bin/sh
# Open WebUI must not start before the ragfr schema exists: Open WebUI would otherwise create
# document_chunk itself, without the French columns and triggers. Polls schema-ready.sql every 2 s.
set -eu
timeout="${WAIT_TIMEOUT_SECONDS:-600}"
deadline=$(( $(date +%s) + timeout ))
ready() {
  psql -XtA -v ON_ERROR_STOP=1 -v required_version="$REQUIRED_SCHEMA_VERSION" -v dims="$EMBEDDING_DIMS" \
    -f /ragfr-scripts/schema-ready.sql 2>/dev/null | grep -qx t
}
until ready; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "wait-for-schema: ragfr schema (version '${REQUIRED_SCHEMA_VERSION:-any}', dims $EMBEDDING_DIMS) not present in $PGDATABASE after ${timeout}s; check the migrations Job: kubectl logs job/<release>-migrate-<revision>" >&2
    exit 1
  fi
  sleep 2
done
echo "wait-for-schema: ragfr schema present (version '${REQUIRED_SCHEMA_VERSION:-any}', dims $EMBEDDING_DIMS)"
