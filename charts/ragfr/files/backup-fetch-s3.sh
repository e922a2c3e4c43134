#!/bin/sh
# Fetches ONE set, RESTORE_STAMP, from S3_BUCKET/S3_PREFIX/ into BACKUP_DIR/<stamp>/ for restore.sh: the first
# container of the restore Job (`make restore-job`, docs/runbooks/restore.md), with the env of the backup
# CronJob's upload container (backup-upload-s3.sh) and the same remotes, "target:" and, encrypted, "sealed:".
# A set is read the way it was written: one holding SHA256SUMS.bin through sealed: (decrypted on the way, the
# passphrase BACKUP_CRYPT_PASSPHRASE obscured through stdin, never on a command line), one holding SHA256SUMS in
# clear (written before encryption was on) as it is. A set with neither is an interrupted upload: refused.
# Whether the files are the ones the backup wrote is restore.sh's to verify, with the backup.integrity key.
set -eu
dst="${BACKUP_DIR:-/backup}"
stamp="${RESTORE_STAMP:-}"
printf '%s\n' "$stamp" | grep -qxE '[0-9]{8}T[0-9]{6}Z' \
  || { echo "backup-fetch: RESTORE_STAMP='$stamp' is not a set's stamp (e.g. 20261201T023000Z)" >&2; exit 1; }
where="$S3_BUCKET/${S3_PREFIX:+$S3_PREFIX/}$stamp/"
raw="target:$S3_BUCKET/${S3_PREFIX:+$S3_PREFIX/}"
held=$(rclone lsf --files-only --include SHA256SUMS --include SHA256SUMS.bin "$raw$stamp/" 2>/dev/null || true)
if printf '%s\n' "$held" | grep -qx SHA256SUMS.bin; then
  passphrase="${BACKUP_CRYPT_PASSPHRASE:-}"
  [ -n "$passphrase" ] || { echo "backup-fetch: $where is encrypted and BACKUP_CRYPT_PASSPHRASE is empty" >&2; exit 1; }
  RCLONE_CONFIG_SEALED_PASSWORD=$(printf '%s' "$passphrase" | rclone obscure -)
  export RCLONE_CONFIG_SEALED_PASSWORD
  src="sealed:$stamp/"
  how="decrypted"
elif printf '%s\n' "$held" | grep -qx SHA256SUMS; then
  src="$raw$stamp/"
  how="in clear"
else
  echo "backup-fetch: $where holds no complete set (no SHA256SUMS: absent, or an interrupted upload); list the sets with rclone lsf --dirs-only" >&2
  exit 1
fi
t0=$(date +%s)
mkdir -p "$dst/$stamp"
rclone copy "$src" "$dst/$stamp/"
echo "backup-fetch: $where -> $dst/$stamp/ ($how) in $(( $(date +%s) - t0 ))s"
