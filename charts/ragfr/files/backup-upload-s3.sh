#!/bin/sh
# Uploads the set backup.sh just wrote (in the shared emptyDir /backup) to S3_BUCKET/S3_PREFIX/<stamp>/ with
# rclone, then deletes the sets beyond BACKUP_KEEP there (oldest first), only after the upload succeeded and
# was checked. rclone is configured by env only (no config file): the chart sets RCLONE_CONFIG_TARGET_TYPE=s3,
# _PROVIDER, _ENDPOINT, _REGION, _ACCESS_KEY_ID and _SECRET_ACCESS_KEY (the keys from backup.s3.existingSecret),
# which define the remote "target:". Env: S3_BUCKET, S3_PREFIX, BACKUP_KEEP, BACKUP_DIR (default /backup).
#
# Encryption at rest (S3_ENCRYPTION=true, backup.s3.encryption): the chart also defines "sealed:", an rclone
# crypt remote over target:<bucket>/<prefix> (RCLONE_CONFIG_SEALED_*: file and set names readable, contents
# encrypted, each object <name>.bin); the passphrase comes as BACKUP_CRYPT_PASSPHRASE and is obscured here into
# RCLONE_CONFIG_SEALED_PASSWORD through stdin (never on a command line). Files are written through sealed: and
# verified with `rclone cryptcheck` (checksums of the local files against the encrypted objects).
#
# SHA256SUMS is uploaded LAST (SHA256SUMS.hmac, its signature, goes with the files before it): a set without
# it in the bucket is an interrupted upload. Retention counts complete sets only (SHA256SUMS or, encrypted,
# SHA256SUMS.bin), and removes interrupted ones older than the oldest set it keeps.
set -eu
src="${BACKUP_DIR:-/backup}"
set_name=$(ls -1 "$src" | grep -E '^[0-9]{8}T[0-9]{6}Z$' | sort | tail -n 1)
[ -n "$set_name" ] || { echo "backup-upload: no complete set in $src" >&2; exit 1; }
raw="target:$S3_BUCKET/${S3_PREFIX:+$S3_PREFIX/}"
if [ "${S3_ENCRYPTION:-false}" = true ]; then
  passphrase="${BACKUP_CRYPT_PASSPHRASE:-}"
  if [ "${#passphrase}" -lt 32 ]; then
    echo "backup-upload: BACKUP_CRYPT_PASSPHRASE is empty or shorter than 32 characters (backup.s3.encryption)" >&2
    exit 1
  fi
  RCLONE_CONFIG_SEALED_PASSWORD=$(printf '%s' "$passphrase" | rclone obscure -)
  export RCLONE_CONFIG_SEALED_PASSWORD
  dest="sealed:"
  check=cryptcheck
  how="encrypted"
else
  dest="$raw"
  check=check
  how="in clear"
fi
t0=$(date +%s)
# Stamps have one-second resolution: never overwrite a complete set already in the bucket (two runs in the
# same second, each from its own emptyDir).
if [ -n "$(rclone lsf --files-only --include SHA256SUMS --include SHA256SUMS.bin "$raw$set_name/" 2>/dev/null || true)" ]; then
  echo "backup-upload: $S3_BUCKET/${S3_PREFIX:+$S3_PREFIX/}$set_name/ already holds a complete set; not overwritten" >&2
  exit 1
fi
rclone copy --exclude SHA256SUMS "$src/$set_name/" "$dest$set_name/"
# Sizes and checksums of every file against the bucket BEFORE the marker: a truncated or altered object fails
# the run here and the set stays incomplete (retention never counts it as a good one).
rclone "$check" --one-way --exclude SHA256SUMS "$src/$set_name/" "$dest$set_name/"
rclone copyto "$src/$set_name/SHA256SUMS" "$dest${set_name}/SHA256SUMS"
rclone "$check" --one-way --include SHA256SUMS "$src/$set_name/" "$dest$set_name/"
echo "backup-upload: $set_name -> $S3_BUCKET/${S3_PREFIX:+$S3_PREFIX/}$set_name/ ($how) in $(( $(date +%s) - t0 ))s"
keep="${BACKUP_KEEP:-0}"
if [ "$keep" -gt 0 ]; then
  # Listed on the raw bucket: sets written in clear (before encryption was on) count and roll off like the others.
  sets=$(rclone lsf --dirs-only "$raw" | tr -d / | grep -E '^[0-9]{8}T[0-9]{6}Z$' | sort -r || true)
  complete=$(rclone lsf --files-only -R --include '/*/SHA256SUMS' --include '/*/SHA256SUMS.bin' "$raw" | cut -d/ -f1 | sort -ru || true)
  oldest_kept=$(echo "$complete" | head -n "$keep" | tail -n 1)
  for old in $sets; do
    if echo "$complete" | head -n "$keep" | grep -qx "$old"; then
      continue  # one of the newest complete sets
    fi
    if ! echo "$complete" | grep -qx "$old" && [ "$old" \> "$oldest_kept" ]; then
      continue  # an interrupted upload newer than what is kept: perhaps still running, left alone
    fi
    rclone purge "$raw$old"
    echo "backup-upload: removed old set $old (keeping $keep)"
  done
fi
