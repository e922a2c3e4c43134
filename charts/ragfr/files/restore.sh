#!/bin/sh
# Restores one backup set written by backup.sh (docs/runbooks/restore.md) into FRESH, EMPTY databases
# created like ragdb's first boot (owner role, extensions vector + unaccent made by a superuser):
#   1. SHA256SUMS is checked first: a damaged set is refused before anything is written;
#   2. each dump is restored as the owner role, in one transaction, stopping at the first error, without
#      the extension entries (the owner cannot own or comment on extensions; they already exist);
#   3. Open WebUI's data volume (uploads) is unpacked into DATA_DIR, which must be empty.
# Env: RESTORE_SET (directory of one set), RAGFR_DATABASE_URL, OPENWEBUI_DATABASE_URL (owner roles, password-
#      less), RAGFR_DB_PASSWORD, OPENWEBUI_DB_PASSWORD (each handed to libpq as PGPASSWORD),
#      DATA_DIR (empty directory; unset or empty: the files are not restored).
set -eu
cd "$RESTORE_SET"
sha256sum -c --quiet SHA256SUMS || { echo "restore: $RESTORE_SET fails its SHA256SUMS; refusing" >&2; exit 1; }
started=$(date +%s)

restore() {  # <name> <connection URL> <password>
  t0=$(date +%s)
  export PGPASSWORD="$3"
  tables=$(psql -XtAc "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'" "$2")
  if [ "$tables" != "0" ]; then
    echo "restore: $1 database is not empty ($tables tables); restore into a fresh database" >&2
    exit 1
  fi
  list="${TMPDIR:-/tmp}/restore-$1.list"
  pg_restore --list "$1.dump" | grep -v -E '^[0-9]+; [0-9]+ [0-9]+ (EXTENSION|COMMENT) - (EXTENSION )?' >"$list" || true
  pg_restore --exit-on-error --single-transaction --no-owner --use-list="$list" --dbname="$2" "$1.dump"
  rm -f "$list"
  unset PGPASSWORD
  echo "restore: $1.dump restored in $(( $(date +%s) - t0 ))s"
}
restore ragfr "$RAGFR_DATABASE_URL" "${RAGFR_DB_PASSWORD:-}"
restore openwebui "$OPENWEBUI_DATABASE_URL" "${OPENWEBUI_DB_PASSWORD:-}"

if [ -n "${DATA_DIR:-}" ] && [ -f openwebui-data.tar.gz ]; then
  if [ -n "$(ls -A "$DATA_DIR")" ]; then
    echo "restore: $DATA_DIR is not empty; restore the files into an empty volume" >&2
    exit 1
  fi
  tar -C "$DATA_DIR" -xzf openwebui-data.tar.gz
  echo "restore: openwebui-data.tar.gz unpacked into $DATA_DIR"
fi
echo "restore: set $(basename "$RESTORE_SET") restored in $(( $(date +%s) - started ))s"
