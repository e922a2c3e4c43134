#!/usr/bin/env bash
# Runs the ragdb image's smoke test (images/ragdb/smoke.sh) in a container.
# Usage: scripts/image-smoke.sh TAG [--old-cpu] [--vector-so FILE]
#   --old-cpu         mount this machine's static qemu-x86_64 into the container and run the postmaster under
#                     `-cpu Skylake-Client` (no AVX-512): proves the IMAGE, not just our local build, runs there
#   --vector-so FILE  mount FILE over the image's vector.so (negative control: a -march=native build must
#                     make the --old-cpu smoke fail with SIGILL, exit 132)
set -euo pipefail
tag="${1:?usage: image-smoke.sh TAG [--old-cpu] [--vector-so FILE]}"; shift
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs --events-backend file)
# Limits must not exceed this host's hard limits (podman's defaults do, and runc then refuses to start).
args=(run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096
      --entrypoint /usr/local/share/ragdb/smoke.sh)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --old-cpu)
      qemu="$(command -v qemu-x86_64)" || { echo "image-smoke: qemu-x86_64 not installed (make setup-apt)" >&2; exit 3; }
      # A dynamically linked qemu would need the host's loader inside the container.
      if readelf -l "$qemu" 2>/dev/null | grep -q 'program interpreter'; then
        echo "image-smoke: $qemu is not static; need qemu-user 10 from bookworm-backports" >&2; exit 3
      fi
      args+=(-v "$qemu:/qemu:ro" -e "SMOKE_EXEC_PREFIX=/qemu -cpu Skylake-Client"); shift ;;
    --vector-so)
      [[ -f "${2:-}" ]] || { echo "image-smoke: --vector-so needs an existing file" >&2; exit 2; }
      args+=(-v "$(realpath "$2"):/usr/lib/postgresql/15/lib/vector.so:ro"); shift 2 ;;
    *) echo "image-smoke: unknown argument $1" >&2; exit 2 ;;
  esac
done
exec "${PODMAN[@]}" "${args[@]}" "$tag"
