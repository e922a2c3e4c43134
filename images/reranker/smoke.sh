#!/usr/bin/env bash
# Runs the built ragfr/reranker image the way the chart does with openwebui.reranker.source=image: its
# copy-reranker-cache init container (`cp -R /hf-cache/. /opt/hf-cache/` as the non-root jobSecurity user),
# then the cache-reranker check (charts/ragfr/files/reranker-cache.py: Open WebUI's offline resolution and a
# CrossEncoder load) with Open WebUI 0.12.4's own libraries (.venv-owui), then scores one French question
# against a passage that answers it and one that does not: the trained weights must rank the answer first.
# Usage: images/reranker/smoke.sh [--plumbing-only] IMAGE_TAG
# --plumbing-only: copy and offline load only, no score check; for an image built from a STAND-IN model
# (tests/images/test_reranker_image.py: the trained weights take an hour to make, random ones cannot rank).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
plumbing_only=0
if [[ "${1:-}" == --plumbing-only ]]; then plumbing_only=1; shift; fi
IMAGE="${1:?usage: smoke.sh [--plumbing-only] IMAGE_TAG}"
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs --events-backend file)
RUN_OPTS=(--rm --network none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096)
REPO=ragfr/reranker-fr
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
chmod 0777 "$work"
"${PODMAN[@]}" run "${RUN_OPTS[@]}" --user 65532:65532 -v "$work:/opt/hf-cache" "$IMAGE" \
  cp -R /hf-cache/. /opt/hf-cache/
commit="$(cat "$work/models--${REPO//\//--}/refs/main")"
out="$(env -i PATH="$PATH" HOME="$work" RERANKER_SOURCE=image RAG_RERANKING_MODEL="$REPO" \
  SENTENCE_TRANSFORMERS_HOME="$work" HF_HOME="$work/hf-home" \
  "$ROOT/.venv-owui/bin/python" "$ROOT/charts/ragfr/files/reranker-cache.py")"
echo "$out"
[[ "$out" == "reranker-cache: $REPO loads offline from $work (commit $commit)" ]] \
  || { echo "smoke: FAILED: unexpected reranker-cache output" >&2; exit 1; }
if [[ $plumbing_only == 1 ]]; then echo "smoke: reranker image $IMAGE plumbing OK (no score check)"; exit 0; fi
HF_HUB_OFFLINE=1 SNAPSHOT="$work/models--${REPO//\//--}/snapshots/$commit" "$ROOT/.venv-owui/bin/python" - <<'PY'
import os
from sentence_transformers import CrossEncoder

model = CrossEncoder(os.environ["SNAPSHOT"], device="cpu")
question = "Dans quel délai faut-il déclarer un vol à l'assureur ?"
answer = ("Déclaration du sinistre. En cas de vol, l'assuré doit déclarer le sinistre à l'assureur dans les deux "
          "jours ouvrés suivant le moment où il en a eu connaissance, et déposer plainte auprès des autorités.")
other = ("La tour Eiffel a été construite par Gustave Eiffel pour l'Exposition universelle de 1889, à Paris, "
         "sur le Champ-de-Mars.")
good, bad = (float(s) for s in model.predict([(question, answer), (question, other)]))
print(f"smoke: scores answer {good:.4f}, unrelated {bad:.4f}")
assert good > bad, "the trained cross-encoder does not rank the answering passage first"
PY
echo "smoke: reranker image $IMAGE OK"
