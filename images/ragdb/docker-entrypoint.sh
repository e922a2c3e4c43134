#!/bin/sh
# The part of the official postgres image's docker-entrypoint.sh that the chart relies on, for images built on
# a base without it (the Debian 12 minbase made with debootstrap; the official base keeps its own script).
# First start with an empty $PGDATA: initdb as the current user with POSTGRES_USER/POSTGRES_PASSWORD
# (scram-sha-256 over TCP), run /docker-entrypoint-initdb.d (*.sh executed if executable, else sourced; *.sql
# through psql) on a server listening only on its socket, stop it. Then exec the command (default postgres).
set -eu
case "${1:-}" in ""|-*) set -- postgres "$@" ;; esac
if [ "$1" = postgres ] && [ ! -s "${PGDATA:?PGDATA must be set}/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set (the chart takes it from the ragdb Secret)}"
  export POSTGRES_USER="${POSTGRES_USER:-postgres}"
  mkdir -p "$PGDATA"; chmod 700 "$PGDATA"
  pwfile="$(mktemp)"; printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  # ragfr refuses a C-locale database (accented letters would split French words): UTF-8 even with no LANG.
  locale="${LANG:-C.UTF-8}"; case "$locale" in C|POSIX) locale=C.UTF-8 ;; esac
  initdb -D "$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale="$locale" >/dev/null
  rm -f "$pwfile"
  printf 'host all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  # As the official image's postgresql.conf.sample: reachable from other pods, not only over loopback.
  printf "listen_addresses = '*'\n" >>"$PGDATA/postgresql.conf"
  pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start >/dev/null
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) if [ -x "$f" ]; then echo "ragdb-entrypoint: running $f"; "$f"; else echo "ragdb-entrypoint: sourcing $f"; . "$f"; fi ;;
      *.sql) echo "ragdb-entrypoint: running $f"; psql -v ON_ERROR_STOP=1 -X -q --username "$POSTGRES_USER" --dbname postgres -f "$f" ;;
      *) [ -e "$f" ] && echo "ragdb-entrypoint: ignoring $f" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "ragdb-entrypoint: init process complete; ready for start up"
fi
exec "$@"
