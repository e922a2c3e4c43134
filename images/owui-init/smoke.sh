#!/usr/bin/env bash
# Runs the built owui-init image the way the pod's `apply-french-patch` init container does, on the REAL
# open-webui 0.12.4 files from .venv-owui: pristine -> exit 0 and an active check; modified -> exit 2 with
# one clear line and nothing written. Usage: images/owui-init/smoke.sh IMAGE_TAG
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
IMAGE="${1:?usage: smoke.sh IMAGE_TAG}"
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs --events-backend file)
# This machine refuses podman's default RLIMIT_NPROC; explicit limits below the host's work.
RUN_OPTS=(--rm --network none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096)
SITE="$("$ROOT/.venv-owui/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
# Every file the manifest edits (the retrieval patch and the chat's evidence gate).
mapfile -t FILES < <(python3 -c 'import json, sys; [print(f["path"]) for f in json.load(open(sys.argv[1]))["files"]]' \
  "$ROOT/patches/open-webui/manifest.json")
for f in "${FILES[@]}"; do
  install -D -m 0644 "$SITE/$f" "$work/ok/$f"; install -D -m 0644 "$SITE/$f" "$work/bad/$f"
done
echo "# local edit" >>"$work/bad/open_webui/retrieval/utils.py"
chmod -R a+rwX "$work"
run() { "${PODMAN[@]}" run "${RUN_OPTS[@]}" --user 65532:65532 -v "$1:/patched" "$IMAGE" "${@:2}"; }

run "$work/ok" --target /patched
"${PODMAN[@]}" run "${RUN_OPTS[@]}" -v "$work/ok:/patched:ro" --entrypoint python3 "$IMAGE" \
  -m ragfr.owui.patcher.check --open-webui-dir /patched
before="$(cd "$work/bad" && find . -type f -print0 | sort -z | xargs -0 sha256sum)"
if out="$(run "$work/bad" --target /patched 2>&1)"; then
  echo "smoke: FAILED: a modified file was accepted" >&2; exit 1
else
  rc=$?
fi
[[ $rc == 2 && "$out" == *"expected open-webui 0.12.4"* ]] || { echo "smoke: FAILED: exit $rc: $out" >&2; exit 1; }
[[ "$before" == "$(cd "$work/bad" && find . -type f -print0 | sort -z | xargs -0 sha256sum)" ]] \
  || { echo "smoke: FAILED: a refused run wrote files" >&2; exit 1; }
echo "smoke: refusal as expected: $out"
echo "smoke: owui-init image $IMAGE OK"
