#!/usr/bin/env bash
# Private PostgreSQL 15 cluster (our pgvector build) for development and tests.
#
# Usage: scripts/pg.sh start|stop|status|dsn [DBNAME]
#   start   initdb on first use, then start (or reuse a running cluster); last line: DATABASE_URL=...
#   stop    fast shutdown (no-op when not running)
#   status  exit 0 and print DATABASE_URL=... when running, exit 3 when not
#   dsn     print the DSN only (cluster must be running)
# Env: RAGFR_PG_STATE (state dir, default .state/pg), RAGFR_PGROOT (default .build/pgroot),
#      RAGFR_PG_USER (OS user running the server when invoked as root; default postgres),
#      RAGFR_PG_EXEC_PREFIX (command the postmaster is started under, e.g. "qemu-x86_64 -cpu Skylake-Client":
#      then `postgres` is started directly, because pg_ctl would exec it natively; initdb stays native),
#      RAGFR_PG_SHARED_BUFFERS (shared_buffers for this start, e.g. 1GB; default: the 256MB written at initdb.
#      A running cluster keeps its value: stop it first).
#
# The server listens on 127.0.0.1 only, on a free port picked at each start (written to STATE/port), plus a
# unix socket in STATE/sock. Auth is scram-sha-256 for the `postgres` role with a generated password kept in
# STATE/password. TEST SETTINGS: fsync, full_page_writes and synchronous_commit are off -- a crash can lose
# or corrupt data. Never point this at data you care about.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
STATE="$(realpath -m "${RAGFR_PG_STATE:-$ROOT/.state/pg}")"
PGROOT="$(realpath -m "${RAGFR_PGROOT:-$ROOT/.build/pgroot}")"
OWNER="${RAGFR_PG_USER:-postgres}"
die() { echo "pg.sh: $*" >&2; exit 1; }

# The server runs as $OWNER, who must be able to traverse every parent of its binaries and state. A checkout
# under a private folder (e.g. /root, mode 700) is not reachable: then run from a copy of the root under
# /var/tmp (refreshed when its binaries change), and keep the default state there too.
reachable() { [[ "$(id -u)" != 0 ]] || runuser -u "$OWNER" -- test -x "$1" 2>/dev/null; }
if [[ -x "$PGROOT/$PG_LIB_SUBDIR/bin/postgres" ]] && ! reachable "$PGROOT/$PG_LIB_SUBDIR/bin"; then
  alt="/var/tmp/ragfr-pgroot-$(echo "$PGROOT" | sha256sum | cut -c1-12)"
  sig="$(stat -c '%Y %s %n' "$PGROOT/$PG_LIB_SUBDIR"/bin/postgres "$PGROOT/$PG_LIB_SUBDIR"/lib/*.so \
         | sha256sum | cut -c1-16)"
  if [[ "$(cat "$alt/.ragfr-sig" 2>/dev/null)" != "$sig" ]]; then
    rm -rf "$alt.tmp" && cp -a "$PGROOT" "$alt.tmp" && echo "$sig" > "$alt.tmp/.ragfr-sig"
    chmod -R a+rX "$alt.tmp" && rm -rf "$alt" && mv "$alt.tmp" "$alt"
    echo "pg.sh: $OWNER cannot reach $PGROOT; running from the copy $alt" >&2
  fi
  PGROOT="$alt"
fi
if [[ -z "${RAGFR_PG_STATE:-}" ]] && ! reachable "$(dirname "$(dirname "$STATE")")"; then
  STATE="/var/tmp/ragfr-state-$(echo "$ROOT" | sha256sum | cut -c1-12)/pg"
fi
BIN="$PGROOT/$PG_LIB_SUBDIR/bin"
DATA="$STATE/data"
SOCK="$STATE/sock"

as_owner() {
  # PostgreSQL refuses to run as root: when we are root, run as an unprivileged OS user.
  # cd /: the checkout itself may be unreadable for the server user (see above).
  if [[ "$(id -u)" == 0 ]]; then (cd / && runuser -u "$OWNER" -- "$@"); else "$@"; fi
}


url() {
  local db="${1:-postgres}"
  echo "postgresql://postgres:$(cat "$STATE/password")@127.0.0.1:$(cat "$STATE/port")/$db"
}

running() { [[ -f "$DATA/postmaster.pid" ]] && as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

init_cluster() {
  [[ -x "$BIN/initdb" ]] || die "no PostgreSQL root at $PGROOT: run 'make setup' first"
  local owner="$OWNER"
  mkdir -p "$STATE"
  if [[ "$(id -u)" == 0 ]]; then
    id "$owner" >/dev/null 2>&1 || die "OS user $owner does not exist (set RAGFR_PG_USER)"
    chown "$owner" "$STATE"
    # Every parent must be traversable by the server's user, or initdb fails with a confusing error.
    runuser -u "$owner" -- test -x "$STATE" || die "$owner cannot reach $STATE (a parent directory is not o+x)"
  fi
  chmod 0700 "$STATE"
  (umask 077; head -c 32 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 32 > "$STATE/password")
  [[ "$(id -u)" == 0 ]] && chown "$owner" "$STATE/password"
  as_owner "$BIN/initdb" -D "$DATA" -U postgres --pwfile="$STATE/password" --auth=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >"$STATE/initdb.log" 2>&1 || die "initdb failed (see $STATE/initdb.log)"
  as_owner mkdir -p "$SOCK"
  as_owner tee -a "$DATA/postgresql.conf" >/dev/null <<CONF
# ragfr test cluster (scripts/pg.sh). Durability is off on purpose: tests only.
listen_addresses = '127.0.0.1'
unix_socket_directories = '$SOCK'
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 256MB
maintenance_work_mem = 512MB
max_connections = 200
logging_collector = off
CONF
}

launch() {
  local port="$1"
  local -a opts=(-p "$port")
  [[ -z "${RAGFR_PG_SHARED_BUFFERS:-}" ]] || opts+=(-c "shared_buffers=$RAGFR_PG_SHARED_BUFFERS")
  if [[ -z "${RAGFR_PG_EXEC_PREFIX:-}" ]]; then
    as_owner "$BIN/pg_ctl" -D "$DATA" -l "$STATE/server.log" -w -t 60 -o "${opts[*]}" start >/dev/null
    return
  fi
  local -a prefix
  read -r -a prefix <<<"$RAGFR_PG_EXEC_PREFIX"
  as_owner setsid "${prefix[@]}" "$BIN/postgres" -D "$DATA" "${opts[@]}" >>"$STATE/server.log" 2>&1 </dev/null &
  local pid=$! waited=0
  # Emulated start-up is slow; wait for connections, not just for the pid file.
  until as_owner "$BIN/pg_isready" -q -h "$SOCK" -p "$port"; do
    kill -0 "$pid" 2>/dev/null || return 1
    (( waited++ < ${RAGFR_PG_START_TIMEOUT:-300} )) || return 1
    sleep 1
  done
}

start() {
  if running; then
    echo "pg.sh: reusing running cluster in $STATE" >&2
    [[ -z "${RAGFR_PG_SHARED_BUFFERS:-}" ]] ||
      echo "pg.sh: RAGFR_PG_SHARED_BUFFERS ignored: a running cluster keeps its shared_buffers (stop it first)" >&2
    echo "DATABASE_URL=$(url "${1:-postgres}")"
    return 0
  fi
  [[ -d "$DATA" ]] || init_cluster
  local port attempt
  for attempt in 1 2 3; do
    port="$(free_port)"
    echo "$port" > "$STATE/port"
    # A port can be taken between picking it and binding it: retry with another one.
    if launch "$port"; then
      echo "pg.sh: started PostgreSQL ($BIN) on 127.0.0.1:$port, state $STATE" >&2
      echo "DATABASE_URL=$(url "${1:-postgres}")"
      return 0
    fi
    echo "pg.sh: start attempt $attempt on port $port failed; last log lines:" >&2
    tail -3 "$STATE/server.log" >&2 || true
  done
  die "could not start the cluster (see $STATE/server.log)"
}

stop() {
  if running; then
    # A server that exits on its own between the check and the stop (a crash, an emulated CPU's SIGILL) leaves
    # pg_ctl no PID file: that is stopped too, not a failure.
    if ! as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null; then
      running && die "pg_ctl could not stop the cluster in $STATE"
      echo "pg.sh: not running any more ($STATE)" >&2
      return 0
    fi
    echo "pg.sh: stopped cluster in $STATE" >&2
  else
    echo "pg.sh: not running ($STATE)" >&2
  fi
}

case "${1:-}" in
  start) start "${2:-}" ;;
  stop) stop ;;
  status) if running; then echo "DATABASE_URL=$(url "${2:-}")"; else echo "pg.sh: not running ($STATE)" >&2; exit 3; fi ;;
  dsn) running || die "not running ($STATE): run scripts/pg.sh start"; url "${2:-}" ;;
  *) sed -n '2,16p' "$0" >&2; exit 2 ;;
esac
