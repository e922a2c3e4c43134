#!/usr/bin/env bash
# `make test`: from a fresh Debian 12 machine (as root) to every test, with no manual step.
#   1. apt packages (-t bookworm; qemu-user -t bookworm-backports), .venv, pgvector fetched + verified +
#      built without AVX-512 and scanned, a private PostgreSQL root       (make setup)
#   2. the private PostgreSQL cluster (free loopback port)
#   3. at once (issue 37 item 9: the machine has two cores, and much of the setup and half the suite wait on
#      downloads, podman, Open WebUI, a browser or a registry):
#        late setup: .venv-owui with the real open-webui 0.12.4 (CPU torch when reachable) (scripts/setup-owui.sh)
#                    beside .venv-s3double with moto's S3 server (scripts/setup-s3double.sh), then the three
#                    images the chart names, smoke-tested (make images); its output in .build/late-setup.log,
#                    printed whole when it ends
#        compute:    ruff + mypy, then pytest on every test but the servers lane's (chart renders, retrieval,
#                    emulated old CPU, ...). The few tests that use what the late setup builds request the fixture
#                    `late_setup` (tests/support/late_setup.py): it waits for .build/late-setup.ok, and fails
#                    with the log when .build/late-setup.failed appears. Those tests run last (tests/conftest.py
#                    orders them so under this protocol only), so that normally the late setup is long done when
#                    they start; how long the lane waited, 0 when it did not, is printed at the end
#        servers:    started when the late setup has succeeded: pytest on the tests that mostly wait
#                    (tests/owui: one Open WebUI server for its API tests; tests/images; tests/tools/
#                    test_cluster_smoke.py, whose first test runs `make cluster-smoke`'s command and checks what it
#                    prints: the smoke runs once, not also as a step of its own)
#      each lane's output in .build/test-lanes/<lane>.log, printed whole when both are done, a line a minute
#      meanwhile; the run fails if the late setup or either lane failed (a failed late setup: its log printed,
#      the servers lane not run). Together the two pytest runs collect exactly the tests `pytest` collects.
#   4. the retrieval-quality gate
#   5. the cluster is stopped whatever happened
# Why step 3 overlaps the late setup with the compute lane: in a fresh `make test` of 2026-12-03 before this change
# (then run one after the other) the Open WebUI venv beside the S3 double took 294 s and the images 76 s after
# `make setup` (178 s); the compute lane, started after them, was the last to finish (2,195 s: lint, then pytest
# 2,118 s), the servers lane's pytest took 1,661 s. Starting the compute lane right after `make setup` should save up
# to those 370 s, less what the late setup's downloads and builds take from its two cores; the saving of a whole
# fresh run has not been measured yet.
# `scripts/test.sh ARGS...` (e.g. a test path): the whole setup first, as before, then one pytest with those
# arguments, no lanes and no waiting.
# Re-runs skip setup steps whose inputs did not change (stamps under .build/).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n== [%4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }
late="$PWD/.build/late-setup"  # .log, then .ok or .failed (tests/support/late_setup.py reads them)
late_pid=""
# Whatever happens: the private cluster is stopped, and a late setup still running (the script stopped early) too.
cleanup() {
  if [[ -n "$late_pid" ]]; then kill "$late_pid" 2>/dev/null || true; fi
  bash scripts/pg.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The Open WebUI venv beside the S3 double (two independent venvs, mostly downloads), then the images, whose
# owui-init smoke test reads .venv-owui. No apt here: `make setup` installed every Debian package before.
late_setup() {
  mkdir -p .build
  bash scripts/setup-s3double.sh >.build/setup-s3double.log 2>&1 &
  local s3double_pid=$!
  bash scripts/setup-owui.sh
  wait "$s3double_pid" || { cat .build/setup-s3double.log; echo "setup-s3double failed" >&2; return 1; }
  cat .build/setup-s3double.log
  step "images: ragfr/ragdb, ragfr/ragfr, ragfr/owui-init with the chart's appVersion, each smoke-tested (make images)"
  bash scripts/images.sh build
}

step "setup: apt, venv, pgvector, private PostgreSQL root"
make --no-print-directory setup

export OMP_NUM_THREADS=2
# pytest-timeout's per-test hang guard (900 s in pyproject.toml) doubled: with the lanes side by side on a busy
# machine, one module's setup (test_browser_reranker: a model, a server, a browser) took 765 s at load 13.
pytest_run=(.venv/bin/pytest -q -p no:cacheprovider --durations=15 --timeout 1800)
start_cluster() {
  step "private PostgreSQL cluster for the tests"
  dsn=$(bash scripts/pg.sh start | tail -n 1)
  dsn=${dsn#DATABASE_URL=}
  export RAGFR_TEST_DSN="$dsn"
}

if [[ $# -gt 0 ]]; then
  step "setup: Open WebUI 0.12.4 venv, and beside it moto's S3 server (the S3 double of tests/chart/test_backup_s3.py)"
  late_setup
  start_cluster
  step "lint: ruff + mypy"
  .venv/bin/ruff check src tools tests patches
  .venv/bin/mypy
  step "pytest $*"
  set +e
  "${pytest_run[@]}" "$@"
  rc=$?
  set -e
else
  # Started before the late setup: the ragfr image's smoke test (images/ragfr/smoke-host.sh) reuses this cluster
  # instead of starting it at the same moment as this script.
  start_cluster
  mkdir -p .build
  rm -f "$late.ok" "$late.failed" "$late.waited"
  step "late setup in the background (Open WebUI venv beside the S3 double, then make images): $late.log"
  ( late_setup ) >"$late.log" 2>&1 &
  late_pid=$!

  # The tests that mostly wait: subprocess servers, containers, a browser, registries. Everything else is the
  # compute lane (--ignore of exactly these paths), so no test is left out or run twice.
  servers=(tests/owui tests/images tests/tools/test_cluster_smoke.py)
  ignore=(); for p in "${servers[@]}"; do ignore+=(--ignore "$p"); done
  lanes=.build/test-lanes
  mkdir -p "$lanes"
  rm -f "$lanes/compute.log" "$lanes/servers.log"
  step "compute lane (ruff + mypy, then pytest on all but ${servers[*]}): $lanes/compute.log"
  (
    set -e
    echo "== lint: ruff + mypy"
    .venv/bin/ruff check src tools tests patches
    .venv/bin/mypy
    echo "== pytest (all but ${servers[*]}; the tests that request the fixture late_setup last)"
    # RAGFR_LATE_SETUP: the late_setup fixture waits for the verdict, and tests/conftest.py runs the tests that
    # request it last. $$ is this script (also in a subshell): the fixture fails if it ends without a verdict.
    RAGFR_LATE_SETUP="$late" RAGFR_LATE_SETUP_WRITER=$$ "${pytest_run[@]}" "${ignore[@]}"
  ) >"$lanes/compute.log" 2>&1 &
  compute_pid=$!
  # The logs are printed whole at the end; meanwhile a line a minute shows each one's last output, so a long run
  # is never silent (CI, a terminal or a pipe alike). Stopped below; ends by itself if this script is gone.
  (
    last() { tail -c 300 "$1" 2>/dev/null | tr '\r' '\n' | grep -v '^$' | tail -n 1 | cut -c1-90; }
    while kill -0 $$ 2>/dev/null; do
      sleep 60
      if [[ -f "$lanes/servers.log" ]]; then servers_now="$(last "$lanes/servers.log")"
      else servers_now="(starts after the late setup) late setup: $(last "$late.log")"; fi
      printf '[%4ss] still running: compute: %s | servers: %s\n' "$(( $(date +%s) - start ))" \
        "$(last "$lanes/compute.log")" "$servers_now"
    done
  ) &
  beat_pid=$!

  set +e
  wait "$late_pid"; late_rc=$?
  late_pid=""
  set -e
  step "late setup done (exit $late_rc): $late.log"
  cat "$late.log"
  if [[ $late_rc -eq 0 ]]; then
    touch "$late.ok"
    step "servers lane (pytest ${servers[*]}, make cluster-smoke included): $lanes/servers.log"
    (
      set -e
      echo "== pytest ${servers[*]}"
      "${pytest_run[@]}" "${servers[@]}"
    ) >"$lanes/servers.log" 2>&1 &
    servers_pid=$!
  else
    # Written whole, then renamed: the fixture never reads half a path.
    echo "$late.log" >"$late.failed.tmp" && mv "$late.failed.tmp" "$late.failed"
    echo "late setup FAILED (exit $late_rc): its log is above; the servers lane is not run" >&2
    echo "== not run: the late setup failed (exit $late_rc, $late.log)" >"$lanes/servers.log"
    servers_pid=""
  fi

  set +e
  wait "$compute_pid"; compute_rc=$?
  step "compute lane done (exit $compute_rc)"
  servers_rc=1
  if [[ -n "$servers_pid" ]]; then wait "$servers_pid"; servers_rc=$?; fi
  kill "$beat_pid" 2>/dev/null; wait "$beat_pid" 2>/dev/null
  step "servers lane done (exit $servers_rc)"
  set -e
  for lane in compute servers; do
    step "lane $lane: $lanes/$lane.log"
    cat "$lanes/$lane.log"
  done
  # The verdicts last, where the end of a long log is read: the late setup's, then each lane's failing tests and
  # its pytest summary.
  if [[ $late_rc -eq 0 ]]; then
    echo "late setup: ok; the compute lane waited for it: $(paste -sd' ' "$late.waited" 2>/dev/null || echo 0) s"
  else
    echo "late setup: FAILED (exit $late_rc): $late.log, printed above"
  fi
  for lane in compute servers; do
    echo "lane $lane: $(grep -E '^[0-9]+ (passed|failed|error)|^(no tests ran|=+ .* in [0-9.]+s)|^== not run' \
      "$lanes/$lane.log" | tail -n 1)"
    grep -E '^(FAILED|ERROR) ' "$lanes/$lane.log" | sed "s/^/  $lane: /" || true
  done
  rc=$(( late_rc != 0 ? late_rc : compute_rc != 0 ? compute_rc : servers_rc ))
fi
# pytest's 5 means "no test collected": that is a failure here, never a pass.
if [[ $rc -ne 0 ]]; then
  step "tests FAILED (exit $rc)"
  exit "$rc"
fi

step "retrieval-quality gate (recall@10 vs eval/baselines.json)"
make --no-print-directory eval-gate

step "all tests passed in $(( $(date +%s) - start ))s"
