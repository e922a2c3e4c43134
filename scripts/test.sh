#!/usr/bin/env bash
# `make test`: from a fresh Debian 12 machine (as root) to every test, with no manual step.
#   1. apt packages (-t bookworm; qemu-user -t bookworm-backports), .venv, pgvector fetched + verified +
#      built without AVX-512 and scanned, a private PostgreSQL root       (make setup)
#   2. .venv-owui with the real open-webui 0.12.4 (CPU torch when reachable) (scripts/setup-owui.sh),
#      .venv-s3double with moto's S3 server (scripts/setup-s3double.sh)
#      the three images the chart names, smoke-tested                      (make images)
#   3. ruff + mypy
#   4. the private PostgreSQL cluster (free loopback port), the cluster smoke (make cluster-smoke),
#      all pytest suites including the slow ones
#      (emulated old CPU, real Open WebUI end to end), then the retrieval-quality gate
#   5. the cluster is stopped whatever happened
# Re-runs skip setup steps whose inputs did not change (stamps under .build/).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n== [%4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }
# The private cluster is started by the images' smoke test already: stop it whatever happens.
trap 'bash scripts/pg.sh stop >/dev/null 2>&1 || true' EXIT

step "setup: apt, venv, pgvector, private PostgreSQL root"
make --no-print-directory setup
step "setup: Open WebUI 0.12.4 venv"
bash scripts/setup-owui.sh
step "setup: moto's S3 server (the S3 protocol double of tests/chart/test_backup_s3.py)"
bash scripts/setup-s3double.sh
step "images: ragfr/ragdb, ragfr/ragfr, ragfr/owui-init with the chart's appVersion, each smoke-tested (make images)"
bash scripts/images.sh build

step "lint: ruff + mypy"
.venv/bin/ruff check src tools tests patches
.venv/bin/mypy

step "private PostgreSQL cluster for the tests"
dsn=$(bash scripts/pg.sh start | tail -n 1)
dsn=${dsn#DATABASE_URL=}
export RAGFR_TEST_DSN="$dsn"
export OMP_NUM_THREADS=2

step "cluster smoke: the rendered default chart's workloads with podman (make cluster-smoke)"
.venv/bin/python -m ragfr_tools.kubesim.smoke --example default

step "pytest (all suites)"
set +e
.venv/bin/pytest -q -p no:cacheprovider --durations=15 "$@"
rc=$?
set -e
# pytest's 5 means "no test collected": that is a failure here, never a pass.
if [[ $rc -ne 0 ]]; then
  step "pytest FAILED (exit $rc)"
  exit "$rc"
fi

step "retrieval-quality gate (recall@10 vs eval/baselines.json)"
make --no-print-directory eval-gate

step "all tests passed in $(( $(date +%s) - start ))s"
