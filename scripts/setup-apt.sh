#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, from bookworm only (plus qemu-user from
# bookworm-backports). A deb-src entry for trixie is added solely so `apt-get source pgvector` can fetch
# pgvector 0.8.0's source; no trixie binary is ever installed because every install names its suite (-t).
# Skips everything when a stamp records that this exact package list was already installed.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
STAMP_DIR="$ROOT/.build/stamps"

BOOKWORM_PKGS=(
  postgresql-15 postgresql-server-dev-15 postgresql-contrib postgresql-client-15
  build-essential binutils dpkg-dev ca-certificates
  # python3 -m venv (.venv, .venv-owui): a plain Debian 12 has python3 without its venv module.
  python3-venv
  podman debootstrap runc uidmap catatonit containernetworking-plugins
  # A real OCI registry on loopback for the images-push test (distribution 2.8; its service is never started).
  docker-registry
  # containerd 1.6 (what k3s embeds) and its ctr, for the `k3s ctr images import` test of the saved archives;
  # the tests start a private instance with its own root and socket.
  containerd
  # skopeo: `make images-save` copies upstream images pinned by digest registry-to-archive with their digest kept.
  skopeo
  chromium fonts-liberation  # the real browser of tests/owui/test_browser.py (playwright drives it); readable screenshots
  # promtool (`promtool check rules`) for the chart's PrometheusRule in tests/chart/test_metrics.py; the server is unused.
  prometheus
  # rclone 1.60.1: the S3 client of the backup upload (tests/chart/test_backup_s3.py runs the chart's upload script
  # with it against moto's S3 server; the chart's upload image is rclone/rclone:1.60.1).
  rclone
  # openssl: the test CA and ragdb certificate of the database.tls cluster-smoke tests (tests/support/pki.py).
  openssl
)
# qemu-user 10 (static-pie /usr/bin/qemu-x86_64): bookworm's 7.2 segfaults running the postmaster.
BACKPORTS_PKGS=(qemu-user)

SOURCES_DIR="${RAGFR_APT_SOURCES_DIR:-/etc/apt/sources.list.d}"
BACKPORTS_FILE="$SOURCES_DIR/ragfr-bookworm-backports.sources"
TRIXIE_SRC_FILE="$SOURCES_DIR/ragfr-trixie-src.sources"

want_sources() {
  cat <<'SRC' > "$1.bpo"
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  cat <<'SRC' > "$1.trixie"
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
}

key="$(printf '%s\n' "${BOOKWORM_PKGS[@]}" "--bpo--" "${BACKPORTS_PKGS[@]}" | sha256sum | cut -c1-16)"
stamp="$STAMP_DIR/apt-$key"
all_installed() {
  local status
  status="$(dpkg-query -W -f='${Status}\n' "${BOOKWORM_PKGS[@]}" "${BACKPORTS_PKGS[@]}" 2>/dev/null)" || return 1
  [[ "$(grep -c '^install ok installed$' <<<"$status")" == $(( ${#BOOKWORM_PKGS[@]} + ${#BACKPORTS_PKGS[@]} )) ]]
}
if [[ -f "$stamp" ]] && ! all_installed; then
  rm -f "$stamp"   # a package was removed since the stamp was written: install again
fi
if [[ -f "$stamp" ]]; then
  echo "setup-apt: packages already installed (stamp $key)"
  exit 0
fi

if [[ "$(id -u)" != 0 ]]; then
  echo "setup-apt: must run as root (apt-get install); run: sudo make setup" >&2
  exit 1
fi

tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
want_sources "$tmp/s"
changed=0
for pair in "bpo:$BACKPORTS_FILE" "trixie:$TRIXIE_SRC_FILE"; do
  src="$tmp/s.${pair%%:*}"; dst="${pair#*:}"
  if ! cmp -s "$src" "$dst"; then install -m 0644 "$src" "$dst"; changed=1; fi
done
lists_stamp="$STAMP_DIR/apt-lists-updated"
if [[ $changed == 1 || ! -f "$lists_stamp" ]]; then
  echo "setup-apt: apt-get update"
  apt-get update -qq
  mkdir -p "$STAMP_DIR"; touch "$lists_stamp"
fi

export DEBIAN_FRONTEND=noninteractive
echo "setup-apt: installing from bookworm: ${BOOKWORM_PKGS[*]}"
apt-get install -y -qq --no-install-recommends -t bookworm "${BOOKWORM_PKGS[@]}"
echo "setup-apt: installing from bookworm-backports: ${BACKPORTS_PKGS[*]}"
apt-get install -y -qq --no-install-recommends -t bookworm-backports "${BACKPORTS_PKGS[@]}"

mkdir -p "$STAMP_DIR"
touch "$stamp"
echo "setup-apt: done"
