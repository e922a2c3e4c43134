#!/bin/sh
# Uploads the set backup.sh just wrote (in the shared emptyDir /backup) to S3_BUCKET/S3_PREFIX/<stamp>/
# with the MinIO client, then deletes the sets beyond BACKUP_KEEP there (oldest first), only after the
# upload succeeded. Env: S3_ENDPOINT, S3_BUCKET, S3_PREFIX, BACKUP_KEEP, AWS_ACCESS_KEY_ID,
# AWS_SECRET_ACCESS_KEY, MC_CONFIG_DIR (writable).
set -eu
mc alias set target "$S3_ENDPOINT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >/dev/null
set_name=$(ls -1 /backup | grep -E '^[0-9]{8}T[0-9]{6}Z$' | sort | tail -n 1)
[ -n "$set_name" ] || { echo "backup-upload: no complete set in /backup" >&2; exit 1; }
dest="target/$S3_BUCKET/${S3_PREFIX:+$S3_PREFIX/}"
mc cp --recursive "/backup/$set_name/" "$dest$set_name/"
echo "backup-upload: $set_name -> $S3_ENDPOINT/$S3_BUCKET/${S3_PREFIX:+$S3_PREFIX/}$set_name/"
keep="${BACKUP_KEEP:-0}"
if [ "$keep" -gt 0 ]; then
  mc ls "$dest" | awk '{print $NF}' | tr -d / | grep -E '^[0-9]{8}T[0-9]{6}Z$' | sort -r | tail -n "+$(( keep + 1 ))" \
    | while read -r old; do
        mc rm --recursive --force "$dest$old/" >/dev/null
        echo "backup-upload: removed old set $old (keeping $keep)"
      done
fi
