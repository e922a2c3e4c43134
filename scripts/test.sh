#!/usr/bin/env bash
# `make test`: from a fresh Debian 12 machine (as root) to every test, with no manual step.
#   1. apt packages (-t bookworm; qemu-user -t bookworm-backports), .venv, pgvector fetched + verified +
#      built without AVX-512 and scanned, a private PostgreSQL root       (make setup)
#   2. the private PostgreSQL cluster (free loopback port)
#   3. at once (issue 37 item 9: the machine has two cores; a pytest run of computed tests keeps one busy, and
#      much of the setup and the rest of the suite wait on downloads, podman, Open WebUI, a browser or a registry):
#        late setup: .venv-owui with the real open-webui 0.12.4 (CPU torch when reachable) (scripts/setup-owui.sh)
#                    beside .venv-s3double with moto's S3 server (scripts/setup-s3double.sh) and the ragdb and
#                    ragfr images, then the owui-init image: the three images the chart names, smoke-tested
#                    (what make images builds); its output in .build/late-setup.log, printed whole when it ends
#        compute:    ruff + mypy, then pytest on every test the three other lanes do not run (chart renders, the
#                    database's migrations and roles, the CLI, the embedding migration, the docs' walks, ...)
#        indexes:    pytest on tests/retrieval, tests/lexical_index, tests/vector_index, tests/filters and
#                    tests/tools but the cluster smoke (the emulated old CPU, the reranker's training, the
#                    benches' smoke runs)
#                    The few tests of these two lanes that use what the late setup builds request the fixture
#                    `late_setup` (tests/support/late_setup.py): it waits for .build/late-setup.ok, and fails
#                    with the log when .build/late-setup.failed appears. Those tests run last (tests/conftest.py
#                    orders them so under this protocol only), so that normally the late setup is long done when
#                    they start; how long the lanes waited, 0 when they did not, is printed at the end
#        owui:       started when the two venvs are ready (.build/late-setup.venvs), while the images build:
#                    pytest on tests/owui (one Open WebUI server for its API tests, Chromium for the browser's)
#        images:     started when the late setup has succeeded: pytest on tests/images and
#                    tests/tools/test_cluster_smoke.py, whose first test runs `make cluster-smoke`'s command and
#                    checks what it prints: the smoke runs once, not also as a step of its own
#      each lane's output in .build/test-lanes/<lane>.log, printed whole when all are done, a line a minute
#      meanwhile; the run fails if the late setup or any lane failed (a failed late setup: its log printed,
#      the image lane not run). Together the four pytest runs collect exactly the tests `pytest` collects.
#   4. the retrieval-quality gate
#   5. the cluster is stopped whatever happened
# Measured (2026-12-06, a fresh clone with `CI=true bash .ci/run`, no podman image, while another job kept one of the
# two cores busy for 15 min): 1,920 s and 1,903 s with the images built after the venvs; 1,773 s and 1,854 s with
# ragdb and ragfr built beside them, the two cores busy (1.91 on average). In the last: setup 113 s; the lanes at
# 114 s; the late setup done at 676 s; index lane 1,016 s, Open WebUI lane 898 s, image lane 1,058 s, compute lane
# 1,492 s (ends last, at 1,791 s); the quality gate 63 s. With two lanes, CI took 2,953 s (stop 41, 2026-12-03); with
# four, 2,617 s (stop 42, the images after the venvs).
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

# Three things at once, mostly downloads: the Open WebUI venv, the S3 double's venv, and the ragdb and ragfr
# images (each smoke-tested; they need neither venv). Then the owui-init image, whose smoke test reads
# .venv-owui: together what `make images` builds. No apt here: `make setup` installed every Debian package.
late_setup() {
  mkdir -p .build
  bash scripts/setup-s3double.sh >.build/setup-s3double.log 2>&1 &
  local s3double_pid=$!
  bash scripts/images.sh build-ragdb-ragfr >.build/images-ragdb-ragfr.log 2>&1 &
  local images_pid=$!
  bash scripts/setup-owui.sh || { kill "$s3double_pid" "$images_pid" 2>/dev/null; return 1; }
  wait "$s3double_pid" || { cat .build/setup-s3double.log; echo "setup-s3double failed" >&2; return 1; }
  cat .build/setup-s3double.log
  touch "$late.venvs"  # the Open WebUI lane starts (make test without arguments)
  step "images: ragfr/ragdb and ragfr/ragfr (started with the venvs), then ragfr/owui-init, each smoke-tested"
  wait "$images_pid" || { cat .build/images-ragdb-ragfr.log; echo "images.sh build-ragdb-ragfr failed" >&2; return 1; }
  cat .build/images-ragdb-ragfr.log
  bash scripts/images.sh build-owui-init
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
  rm -f "$late.ok" "$late.failed" "$late.waited" "$late.venvs"
  step "late setup in the background (Open WebUI and S3-double venvs beside the ragdb and ragfr images, then" \
    "owui-init): $late.log"
  ( late_setup ) >"$late.log" 2>&1 &
  late_pid=$!

  # Four lanes (the header says which tests each runs). A pytest run of computed tests keeps about one core busy
  # (1.12 on average, measured alone on 2026-12-03: pytest 1,821 s for the compute and index lanes' tests, about
  # 860 s of it the index lane's), while the late setup and the Open WebUI, image and cluster tests mostly wait
  # on downloads, servers, podman and a browser. The compute lane runs every test the three others do not
  # (--ignore of exactly their paths), so no test is left out or run twice.
  indexes=(tests/retrieval tests/lexical_index tests/vector_index tests/filters tests/tools)
  owui=(tests/owui)
  images=(tests/images tests/tools/test_cluster_smoke.py)
  ignore() { local p; ignored=(); for p in "$@"; do ignored+=(--ignore "$p"); done; }
  lanes=.build/test-lanes
  mkdir -p "$lanes"
  rm -f "$lanes"/*.log
  # RAGFR_LATE_SETUP: the late_setup fixture waits for the verdict, and tests/conftest.py runs the tests that
  # request it last. $$ is this script (also in a subshell): the fixture fails if it ends without a verdict.
  late_env=(env RAGFR_LATE_SETUP="$late" RAGFR_LATE_SETUP_WRITER=$$)
  ignore "${indexes[@]}" "${owui[@]}" "${images[@]}"
  step "compute lane (ruff + mypy, then pytest on all but ${indexes[*]} ${owui[*]} ${images[*]}): $lanes/compute.log"
  (
    set -e
    echo "== lint: ruff + mypy"
    .venv/bin/ruff check src tools tests patches
    .venv/bin/mypy
    echo "== pytest (all but ${indexes[*]} ${owui[*]} ${images[*]}; the tests that request late_setup last)"
    "${late_env[@]}" "${pytest_run[@]}" "${ignored[@]}"
  ) >"$lanes/compute.log" 2>&1 &
  compute_pid=$!
  ignore "${owui[@]}" "${images[@]}"
  step "index lane (pytest ${indexes[*]} but ${images[*]}): $lanes/indexes.log"
  (
    set -e
    echo "== pytest ${indexes[*]} (but ${images[*]}; the tests that request late_setup last)"
    "${late_env[@]}" "${pytest_run[@]}" "${indexes[@]}" "${ignored[@]}"
  ) >"$lanes/indexes.log" 2>&1 &
  indexes_pid=$!
  step "Open WebUI lane (pytest ${owui[*]}, once .venv-owui is ready, before the images): $lanes/owui.log"
  (
    set -e
    # Open WebUI runs from .venv-owui in these tests, never from an image: they start when the venvs are ready.
    until [[ -f "$late.venvs" ]]; do
      if ! kill -0 "$late_pid" 2>/dev/null && [[ ! -f "$late.venvs" ]]; then
        echo "== not run: the late setup ended before the Open WebUI venv was ready ($late.log)"
        exit 1
      fi
      sleep 2
    done
    echo "== pytest ${owui[*]}"
    "${pytest_run[@]}" "${owui[@]}"
  ) >"$lanes/owui.log" 2>&1 &
  owui_pid=$!
  # The logs are printed whole at the end; meanwhile a line a minute shows each one's last output, so a long run
  # is never silent (CI, a terminal or a pipe alike). Stopped below; ends by itself if this script is gone.
  (
    # Not under the script's `set -e -o pipefail`: a lane's log that does not exist yet (the image lane's until
    # the late setup ends) or holds no line must print nothing, not end the heartbeat.
    set +e +o pipefail
    last() { tail -c 300 "$1" 2>/dev/null | tr '\r' '\n' | grep -v '^$' | tail -n 1 | cut -c1-40; }
    while kill -0 $$ 2>/dev/null; do
      sleep 60
      line="[$(( $(date +%s) - start ))s] still running:"
      for lane in compute indexes owui images; do line+=" $lane: $(last "$lanes/$lane.log") |"; done
      echo "$line late setup: $(last "$late.log")"
    done
  ) &
  beat_pid=$!

  set +e
  wait "$late_pid"; late_rc=$?
  set -e
  step "late setup done (exit $late_rc): $late.log"
  cat "$late.log"
  if [[ $late_rc -eq 0 ]]; then
    touch "$late.ok"
    step "image lane (pytest ${images[*]}, make cluster-smoke included): $lanes/images.log"
    (
      set -e
      echo "== pytest ${images[*]}"
      "${pytest_run[@]}" "${images[@]}"
    ) >"$lanes/images.log" 2>&1 &
    images_pid=$!
  else
    # Written whole, then renamed: the fixture never reads half a path.
    echo "$late.log" >"$late.failed.tmp" && mv "$late.failed.tmp" "$late.failed"
    echo "late setup FAILED (exit $late_rc): its log is above; the image lane is not run" >&2
    echo "== not run: the late setup failed (exit $late_rc, $late.log)" >"$lanes/images.log"
    images_pid=""
  fi
  late_pid=""

  set +e
  declare -A lane_rc=()
  for lane in compute indexes owui images; do
    pid_var="${lane}_pid"
    if [[ -n "${!pid_var}" ]]; then wait "${!pid_var}"; lane_rc[$lane]=$?; else lane_rc[$lane]=1; fi
    step "$lane lane done (exit ${lane_rc[$lane]})"
  done
  kill "$beat_pid" 2>/dev/null; wait "$beat_pid" 2>/dev/null
  set -e
  for lane in compute indexes owui images; do
    step "lane $lane: $lanes/$lane.log"
    cat "$lanes/$lane.log"
  done
  # The verdicts last, where the end of a long log is read: the late setup's, then each lane's failing tests and
  # its pytest summary.
  if [[ $late_rc -eq 0 ]]; then
    echo "late setup: ok; the compute and index lanes waited for it: $(paste -sd' ' "$late.waited" 2>/dev/null || echo 0) s"
  else
    echo "late setup: FAILED (exit $late_rc): $late.log, printed above"
  fi
  rc=$late_rc
  for lane in compute indexes owui images; do
    echo "lane $lane: $(grep -E '^[0-9]+ (passed|failed|error)|^(no tests ran|=+ .* in [0-9.]+s)|^== not run' \
      "$lanes/$lane.log" | tail -n 1)"
    grep -E '^(FAILED|ERROR) ' "$lanes/$lane.log" | sed "s/^/  $lane: /" || true
    if [[ $rc -eq 0 ]]; then rc=${lane_rc[$lane]}; fi
  done
fi
# pytest's 5 means "no test collected": that is a failure here, never a pass.
if [[ $rc -ne 0 ]]; then
  step "tests FAILED (exit $rc)"
  exit "$rc"
fi

step "retrieval-quality gate (recall@10 vs eval/baselines.json)"
make --no-print-directory eval-gate

step "all tests passed in $(( $(date +%s) - start ))s"
