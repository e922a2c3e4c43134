#!/bin/sh
# One backup set of a ragfr release (docs/runbooks/restore.md), run by the backup CronJob in the ragdb
# image so pg_dump matches the server:
#   <BACKUP_DIR>/<UTC stamp>/ragfr.dump          pg_dump -Fc of the vector database (document_chunk, ragfr schema)
#                            openwebui.dump      pg_dump -Fc of Open WebUI's database (users, chats, knowledge bases)
#                            openwebui-data.tar.gz  Open WebUI's data volume (uploads), cache/ excluded
#                            SHA256SUMS          checksums of the three, checked by the restore
#                            SHA256SUMS.hmac     "<hex>  <stamp>": HMAC-SHA256 keyed with BACKUP_HMAC_KEY of the line
#                                                "ragfr-backup-set <stamp>" then SHA256SUMS: whoever can write where
#                                                the sets are kept can neither rewrite a file AND its checksum nor
#                                                pass an older set off as a newer one without the key; restore.sh
#                                                checks it first
# A set is written under .incomplete-<stamp> and renamed when complete, so a crashed run never looks
# like a backup; only then are sets beyond BACKUP_KEEP (oldest first) deleted.
# Env: BACKUP_DIR, BACKUP_KEEP (0: keep all), RAGFR_DATABASE_URL, OPENWEBUI_DATABASE_URL (password-less),
#      RAGFR_DB_PASSWORD, OPENWEBUI_DB_PASSWORD (each handed to libpq as PGPASSWORD, never put in a URL),
#      DATA_DIR (Open WebUI's data volume; empty: no file backup),
#      BACKUP_HMAC_KEY (the backup.integrity Secret's key, at least 32 characters; openssl is in the ragdb image
#      through postgresql-common -> ssl-cert).
set -eu
umask 077
BACKUP_HMAC_KEY="${BACKUP_HMAC_KEY:-}"
if [ "${#BACKUP_HMAC_KEY}" -lt 32 ]; then
  echo "backup: BACKUP_HMAC_KEY is empty or shorter than 32 characters: a set must be signed (backup.integrity, docs/runbooks/restore.md)" >&2
  exit 1
fi
stamp=$(date -u +%Y%m%dT%H%M%SZ)
# One set per second at most (a manual run right after the scheduled one must not merge into it).
while [ -e "$BACKUP_DIR/$stamp" ] || [ -e "$BACKUP_DIR/.incomplete-$stamp" ]; do
  sleep 1
  stamp=$(date -u +%Y%m%dT%H%M%SZ)
done
work="$BACKUP_DIR/.incomplete-$stamp"
mkdir -p "$work"
started=$(date +%s)

size() { wc -c <"$1" | tr -d ' '; }

dump() {  # <name> <connection URL> <password>
  t0=$(date +%s)
  PGPASSWORD="$3" pg_dump --format=custom --compress=6 --dbname="$2" --file="$work/$1.dump"
  # A dump pg_restore cannot list is not a backup: fail now, not on the day of the restore.
  pg_restore --list "$work/$1.dump" >/dev/null
  echo "backup: $1.dump $(size "$work/$1.dump") bytes in $(( $(date +%s) - t0 ))s"
}
dump ragfr "$RAGFR_DATABASE_URL" "${RAGFR_DB_PASSWORD:-}"
dump openwebui "$OPENWEBUI_DATABASE_URL" "${OPENWEBUI_DB_PASSWORD:-}"

if [ -n "${DATA_DIR:-}" ]; then
  t0=$(date +%s)
  tar -C "$DATA_DIR" --exclude=./cache -czf "$work/openwebui-data.tar.gz" .
  echo "backup: openwebui-data.tar.gz $(size "$work/openwebui-data.tar.gz") bytes in $(( $(date +%s) - t0 ))s"
fi

(cd "$work" && ls -1 | sort | xargs sha256sum -- >../.SHA256SUMS-$stamp && mv ../.SHA256SUMS-$stamp SHA256SUMS)
# The key reaches openssl as an argument, visible only to this container's own processes (/proc of its PID
# namespace), never written to disk or logged.
mac=$({ printf 'ragfr-backup-set %s\n' "$stamp"; cat "$work/SHA256SUMS"; } | openssl dgst -sha256 -hmac "$BACKUP_HMAC_KEY" -r | cut -d' ' -f1)
printf '%s\n' "$mac" | grep -qxE '[0-9a-f]{64}' || { echo "backup: openssl gave no HMAC" >&2; exit 1; }
printf '%s  %s\n' "$mac" "$stamp" >"$work/SHA256SUMS.hmac"
mv "$work" "$BACKUP_DIR/$stamp"
echo "backup: set $stamp complete in $(( $(date +%s) - started ))s"

keep="${BACKUP_KEEP:-0}"
if [ "$keep" -gt 0 ]; then
  # Set names are UTC stamps: lexical order is age order.
  ls -1 "$BACKUP_DIR" | grep -E '^[0-9]{8}T[0-9]{6}Z$' | sort -r | tail -n "+$(( keep + 1 ))" | while read -r old; do
    rm -rf -- "${BACKUP_DIR:?}/$old"
    echo "backup: removed old set $old (keeping $keep)"
  done
  # Leftovers of crashed runs, never the one just renamed.
  find "$BACKUP_DIR" -maxdepth 1 -name '.incomplete-*' -mmin +60 -exec rm -rf -- {} +
fi
