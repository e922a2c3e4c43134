#!/usr/bin/env bash
# `make db`: start the private cluster, create database $RAGFR_DB (default ragfr) if missing, apply the
# migrations with `ragfr migrate`, and print DATABASE_URL=... as the last line.
# Extra arguments are passed to `ragfr migrate` (e.g. --dims 384 --embedding-model local:multilingual-e5-small).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
VENV="${VENV:-$ROOT/.venv}"
DB="${RAGFR_DB:-ragfr}"
[[ "$DB" =~ ^[a-z_][a-z0-9_]*$ ]] || { echo "db.sh: RAGFR_DB must be a plain lower-case identifier" >&2; exit 2; }
PSQL="${RAGFR_PGROOT:-$ROOT/.build/pgroot}/$PG_LIB_SUBDIR/bin/psql"

admin_url="$("$ROOT/scripts/pg.sh" start | tail -1)"
admin_url="${admin_url#DATABASE_URL=}"
db_url="${admin_url%/*}/$DB"
if [[ "$("$PSQL" "$admin_url" -qtAc "select 1 from pg_database where datname = '$DB'")" != 1 ]]; then
  "$PSQL" "$admin_url" -qc "create database $DB" >/dev/null
  echo "db.sh: created database $DB" >&2
fi
# A database without its schema is useless to every caller: a failing migrate fails this script.
"$VENV/bin/ragfr" migrate --dsn "$db_url" "$@" >&2
echo "DATABASE_URL=$db_url"
