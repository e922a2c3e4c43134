#!/usr/bin/env bash
# `make test`: from a fresh Debian 12 machine (as root) to every test, with no manual step.
#   1. apt packages (-t bookworm; qemu-user -t bookworm-backports), .venv, pgvector fetched + verified +
#      built without AVX-512 and scanned, a private PostgreSQL root       (make setup)
#   2. .venv-owui with the real open-webui 0.12.4 (CPU torch when reachable) (scripts/setup-owui.sh),
#      .venv-s3double with moto's S3 server (scripts/setup-s3double.sh)
#      the three images the chart names, smoke-tested                      (make images)
#   3. the private PostgreSQL cluster (free loopback port), then two lanes at once (issue 37 item 9: the machine
#      has two cores, and half the suite waits on podman, Open WebUI, a browser or a registry):
#        servers: pytest on the tests that mostly wait (tests/owui: one Open WebUI server for its API tests;
#                 tests/images; tests/tools/test_cluster_smoke.py, whose first test runs `make cluster-smoke`'s
#                 command and checks what it prints: the smoke runs once, not also as a step of its own)
#        compute: ruff + mypy, then pytest on every other test (chart renders, retrieval, emulated old CPU, ...)
#      each lane's output in .build/test-lanes/<lane>.log, printed whole when both are done; the run fails if
#      either lane failed. Together the two pytest runs collect exactly the tests `pytest` collects.
#   4. the retrieval-quality gate
#   5. the cluster is stopped whatever happened
# `scripts/test.sh ARGS...` (e.g. a test path): one pytest with those arguments, no lanes.
# Re-runs skip setup steps whose inputs did not change (stamps under .build/).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n== [%4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }
# The private cluster is started by the images' smoke test already: stop it whatever happens.
trap 'bash scripts/pg.sh stop >/dev/null 2>&1 || true' EXIT

step "setup: apt, venv, pgvector, private PostgreSQL root"
make --no-print-directory setup
step "setup: Open WebUI 0.12.4 venv, and beside it moto's S3 server (the S3 double of tests/chart/test_backup_s3.py)"
# Two independent venvs, mostly downloads: at once (about 45 s less on a fresh machine, issue 37 item 9).
mkdir -p .build
bash scripts/setup-s3double.sh >.build/setup-s3double.log 2>&1 &
s3double_pid=$!
bash scripts/setup-owui.sh
wait "$s3double_pid" || { cat .build/setup-s3double.log; echo "setup-s3double failed" >&2; exit 1; }
cat .build/setup-s3double.log
step "images: ragfr/ragdb, ragfr/ragfr, ragfr/owui-init with the chart's appVersion, each smoke-tested (make images)"
bash scripts/images.sh build

step "private PostgreSQL cluster for the tests"
dsn=$(bash scripts/pg.sh start | tail -n 1)
dsn=${dsn#DATABASE_URL=}
export RAGFR_TEST_DSN="$dsn"
export OMP_NUM_THREADS=2
# pytest-timeout's per-test hang guard (900 s in pyproject.toml) doubled: with the lanes side by side on a busy
# machine, one module's setup (test_browser_reranker: a model, a server, a browser) took 765 s at load 13.
pytest_run=(.venv/bin/pytest -q -p no:cacheprovider --durations=15 --timeout 1800)

if [[ $# -gt 0 ]]; then
  step "lint: ruff + mypy"
  .venv/bin/ruff check src tools tests patches
  .venv/bin/mypy
  step "pytest $*"
  set +e
  "${pytest_run[@]}" "$@"
  rc=$?
  set -e
else
  # The tests that mostly wait: subprocess servers, containers, a browser, registries. Everything else is the
  # compute lane (--ignore of exactly these paths), so no test is left out or run twice.
  servers=(tests/owui tests/images tests/tools/test_cluster_smoke.py)
  ignore=(); for p in "${servers[@]}"; do ignore+=(--ignore "$p"); done
  lanes=.build/test-lanes
  mkdir -p "$lanes"
  step "two lanes: servers (pytest ${servers[*]}, make cluster-smoke included) and compute (ruff + mypy, then pytest on the rest); logs in $lanes"
  (
    set -e
    echo "== pytest ${servers[*]}"
    "${pytest_run[@]}" "${servers[@]}"
  ) >"$lanes/servers.log" 2>&1 &
  servers_pid=$!
  (
    set -e
    echo "== lint: ruff + mypy"
    .venv/bin/ruff check src tools tests patches
    .venv/bin/mypy
    echo "== pytest (all but ${servers[*]})"
    "${pytest_run[@]}" "${ignore[@]}"
  ) >"$lanes/compute.log" 2>&1 &
  compute_pid=$!
  # The logs are printed whole at the end; meanwhile a line a minute shows each lane's last output, so a
  # long run is never silent (CI, a terminal or a pipe alike).
  (
    while kill -0 "$compute_pid" 2>/dev/null || kill -0 "$servers_pid" 2>/dev/null; do
      sleep 60
      last() { tail -c 300 "$lanes/$1.log" 2>/dev/null | tr '\r' '\n' | grep -v '^$' | tail -n 1 | cut -c1-90; }
      printf '[%4ss] lanes still running: compute: %s | servers: %s\n' "$(( $(date +%s) - start ))" \
        "$(last compute)" "$(last servers)"
    done
  ) &
  beat_pid=$!
  set +e
  wait "$compute_pid"; compute_rc=$?
  step "compute lane done (exit $compute_rc)"
  wait "$servers_pid"; servers_rc=$?
  kill "$beat_pid" 2>/dev/null; wait "$beat_pid" 2>/dev/null
  step "servers lane done (exit $servers_rc)"
  set -e
  for lane in compute servers; do
    step "lane $lane: $lanes/$lane.log"
    cat "$lanes/$lane.log"
  done
  # Both verdicts last, where the end of a long log is read: each lane's failing tests and its pytest summary.
  for lane in compute servers; do
    echo "lane $lane: $(grep -E '^[0-9]+ (passed|failed|error)|^(no tests ran|=+ .* in [0-9.]+s)' "$lanes/$lane.log" \
      | tail -n 1)"
    grep -E '^(FAILED|ERROR) ' "$lanes/$lane.log" | sed "s/^/  $lane: /" || true
  done
  rc=$(( compute_rc != 0 ? compute_rc : servers_rc ))
fi
# pytest's 5 means "no test collected": that is a failure here, never a pass.
if [[ $rc -ne 0 ]]; then
  step "tests FAILED (exit $rc)"
  exit "$rc"
fi

step "retrieval-quality gate (recall@10 vs eval/baselines.json)"
make --no-print-directory eval-gate

step "all tests passed in $(( $(date +%s) - start ))s"
