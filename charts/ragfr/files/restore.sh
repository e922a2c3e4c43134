#!/bin/sh
# Restores one backup set written by backup.sh (docs/runbooks/restore.md) into FRESH, EMPTY databases
# created like ragdb's first boot (owner role, extensions vector + unaccent made by a superuser):
#   1. the set is verified before anything is written, and refused (naming the file) unless:
#      a. SHA256SUMS.hmac ("<hex>  <stamp>") is the HMAC-SHA256 under BACKUP_HMAC_KEY (the backup.integrity key)
#         of "ragfr-backup-set <stamp>" and SHA256SUMS: a rewritten manifest or the wrong key is refused, and so
#         is a set lying in a directory named after another stamp (an older set passed off as a newer one)
#         (RESTORE_ALLOW_UNSIGNED=1 accepts a set WITHOUT SHA256SUMS.hmac, written by a chart before it, after
#         the operator has checked it by other means);
#      b. every file of the set is listed in SHA256SUMS, every listed file is there, and each matches its
#         SHA-256 (sha256sum -c alone would pass a file the manifest leaves out);
#   2. each dump is restored as the owner role, in one transaction, stopping at the first error, without
#      the extension entries (the owner cannot own or comment on extensions; they already exist);
#   3. Open WebUI's data volume (uploads) is unpacked into DATA_DIR, which must be empty, or is emptied first with
#      RESTORE_WIPE_DATA_DIR=1 (only here, after the set was verified: a refused set leaves the volume as it was).
# Env: RESTORE_SET (directory of one set), BACKUP_HMAC_KEY, RAGFR_DATABASE_URL, OPENWEBUI_DATABASE_URL (owner
#      roles, password-less), RAGFR_DB_PASSWORD, OPENWEBUI_DB_PASSWORD (each handed to libpq as PGPASSWORD),
#      DATA_DIR (empty directory; unset or empty: the files are not restored), RESTORE_WIPE_DATA_DIR,
#      RESTORE_ONLY ("databases" or "files": one part, the set verified by each; the restore Job,
#      tools/ragfr_tools/restore_job.py, runs the files as Open WebUI's user, who owns them, and the databases
#      as ragdb's).
set -eu
cd "$RESTORE_SET"
refuse() { echo "restore: $RESTORE_SET: $1; refusing" >&2; exit 1; }
# A checksum problem names the file, then ends with the line operators (and alerts) already know.
damaged() { echo "restore: $RESTORE_SET: $1" >&2; echo "restore: $RESTORE_SET fails its SHA256SUMS; refusing" >&2; exit 1; }

# 1a. The manifest is authentic.
[ -f SHA256SUMS ] || refuse "no SHA256SUMS (an interrupted backup or upload)"
if [ -f SHA256SUMS.hmac ]; then
  [ -n "${BACKUP_HMAC_KEY:-}" ] || refuse "BACKUP_HMAC_KEY is empty: give the key of the backup.integrity Secret that signed this set"
  signature=$(cat SHA256SUMS.hmac)
  { [ "$(wc -l <SHA256SUMS.hmac)" -eq 1 ] && printf '%s\n' "$signature" | grep -qxE '[0-9a-f]{64}  [0-9]{8}T[0-9]{6}Z'; } \
    || refuse "SHA256SUMS.hmac is not one line '<hmac>  <stamp>'"
  want=${signature%%  *}
  signed_as=${signature##*  }
  got=$({ printf 'ragfr-backup-set %s\n' "$signed_as"; cat SHA256SUMS; } | openssl dgst -sha256 -hmac "$BACKUP_HMAC_KEY" -r | cut -d' ' -f1)
  [ "$got" = "$want" ] || refuse "SHA256SUMS.hmac does not authenticate SHA256SUMS with this BACKUP_HMAC_KEY: the manifest was rewritten, or the key is not the one that signed the set"
  here=$(basename "$RESTORE_SET")
  if [ "$here" != "$signed_as" ] && printf '%s\n' "$here" | grep -qxE '[0-9]{8}T[0-9]{6}Z'; then
    refuse "this set was signed as $signed_as but lies in $here: a set renamed (an older one passed off as a newer one?)"
  fi
  echo "restore: set $signed_as, manifest authenticated"
elif [ "${RESTORE_ALLOW_UNSIGNED:-}" = 1 ]; then
  echo "restore: WARNING: $RESTORE_SET has no SHA256SUMS.hmac; restoring an UNAUTHENTICATED set (RESTORE_ALLOW_UNSIGNED=1)" >&2
else
  refuse "no SHA256SUMS.hmac, the manifest is not authenticated (a set from a chart before backup.integrity: check it by other means, then RESTORE_ALLOW_UNSIGNED=1)"
fi

# 1b. The manifest covers the set exactly: one well-formed line per file, no file left out, none missing.
bad=$(grep -nvE '^[0-9a-f]{64} [ *][A-Za-z0-9._-]+$' SHA256SUMS | head -n 1 | cut -d: -f1) || true
[ -z "$bad" ] || damaged "line $bad of SHA256SUMS is not '<sha256>  <file name>'"
twice=$(sed -E 's/^[0-9a-f]{64} [ *]//' SHA256SUMS | sort | uniq -d | head -n 1)
[ -z "$twice" ] || damaged "$twice is listed twice in SHA256SUMS"
unlisted=$(ls -A | awk 'NR == FNR { sub(/^[0-9a-f]+ [ *]/, ""); listed[$0] = 1; next }
                         $0 != "SHA256SUMS" && $0 != "SHA256SUMS.hmac" && !($0 in listed) { print; exit }' SHA256SUMS -)
[ -z "$unlisted" ] || damaged "$unlisted is not listed in SHA256SUMS"
for required in ragfr.dump openwebui.dump; do
  sed -E 's/^[0-9a-f]{64} [ *]//' SHA256SUMS | grep -qxF "$required" || damaged "$required is not listed in SHA256SUMS"
done
while read -r sum name; do
  name=${name#\*}
  [ -f "$name" ] || damaged "$name, listed in SHA256SUMS, is missing"
  [ "$(sha256sum <"$name" | cut -d' ' -f1)" = "$sum" ] || damaged "$name does not match its SHA-256 in SHA256SUMS (damaged or altered)"
done <SHA256SUMS
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
case "${RESTORE_ONLY:-}" in
  ""|databases|files) ;;
  *) refuse "RESTORE_ONLY=${RESTORE_ONLY} is neither databases nor files" ;;
esac
if [ "${RESTORE_ONLY:-}" != files ]; then
  restore ragfr "$RAGFR_DATABASE_URL" "${RAGFR_DB_PASSWORD:-}"
  restore openwebui "$OPENWEBUI_DATABASE_URL" "${OPENWEBUI_DB_PASSWORD:-}"
fi

if [ "${RESTORE_ONLY:-}" != databases ] && [ -n "${DATA_DIR:-}" ] && [ -f openwebui-data.tar.gz ]; then
  if [ "${RESTORE_WIPE_DATA_DIR:-}" = 1 ]; then
    # The files of the state being replaced: the restored databases no longer name them.
    find "$DATA_DIR" -mindepth 1 -delete
    echo "restore: $DATA_DIR emptied (RESTORE_WIPE_DATA_DIR=1)"
  elif [ -n "$(ls -A "$DATA_DIR")" ]; then
    echo "restore: $DATA_DIR is not empty; restore the files into an empty volume (or RESTORE_WIPE_DATA_DIR=1)" >&2
    exit 1
  fi
  # Owned by whoever unpacks (Open WebUI's user in the restore Job), not by the uids recorded in the archive:
  # a container without CAP_CHOWN could not give them back anyway.
  tar --no-same-owner -C "$DATA_DIR" -xzf openwebui-data.tar.gz
  echo "restore: openwebui-data.tar.gz unpacked into $DATA_DIR"
fi
echo "restore: set $(basename "$RESTORE_SET") restored in $(( $(date +%s) - started ))s"
