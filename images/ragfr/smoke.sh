#!/bin/sh
# Smoke test run INSIDE the ragfr image, as the pods run it (uid 65532, read-only root, HOME=/tmp):
# the CLI answers, and `ragfr migrate` then `ragfr migrate --wait` succeed against DATABASE_URL.
set -eu
ragfr --version
python -c 'import kubernetes, psycopg, ragfr.embmigrate.k8s.client' 
ragfr migrate --dsn "$DATABASE_URL" --dims "${SMOKE_DIMS:-1024}"
ragfr migrate --dsn "$DATABASE_URL" --wait --timeout 30
echo "ragfr smoke: OK"
