#!/usr/bin/env bash
# Creates .venv-s3double: moto's S3 server (`moto_server`), the protocol double of an S3 endpoint for
# tests/chart/test_backup_s3.py. No real S3 server runs here (MinIO is not packaged in Debian or PyPI;
# radosgw needs a whole Ceph cluster), so the SERVER is a double while the client (rclone, apt), the upload
# script as rendered by the chart and the restore are the real ones. Its own venv: moto pins
# python-dateutil<3, which the kubernetes client in .venv refuses.
# Skips everything when a stamp keyed on this script and the Python version exists.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
VENV="${S3DOUBLE_VENV:-$ROOT/.venv-s3double}"
PYTHON="${PYTHON:-python3}"
MOTO_SPEC="moto[server]==5.2.5"

key="$( { sha256sum "$0"; "$PYTHON" -VV; } | sha256sum | cut -c1-16)"
stamp="$VENV/.ragfr-s3double-$key"
if [[ -f "$stamp" && -x "$VENV/bin/moto_server" ]]; then
  echo "setup-s3double: up to date ($VENV, stamp $key)"
  exit 0
fi
[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
echo "setup-s3double: $MOTO_SPEC -> $VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check -q "$MOTO_SPEC"
rm -f "$VENV"/.ragfr-s3double-*
touch "$stamp"
echo "setup-s3double: ready ($VENV)"
