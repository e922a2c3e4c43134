#!/usr/bin/env bash
# Builds the ragfr/reranker image from the model `make reranker` trained; prints its tag as the last line.
#   images/reranker/build.sh [--base IMAGE] [--tag TAG] [--model DIR] [--context-only]
# --model defaults to the default preset's .state/reranker/model-<hyper hash> (tools/ragfr_tools/reranker/
# hyper.py); exit 3 when it is not there (train it first: make reranker, about 70 min on 2 cores).
# --base defaults to the Containerfile's debian:bookworm-slim; with no registry (this build machine), pass the
# project's Debian 12 minbase: --base localhost/ragfr-bookworm-minbase:1.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs --events-backend file)
PY="${PY:-$ROOT/.venv/bin/python}"
base="" tag="" model="" context_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --base) base="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --context-only) context_only=1; shift ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "reranker build: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
export PYTHONPATH="$ROOT/tools${PYTHONPATH:+:$PYTHONPATH}"
model="${model:-$(cd "$ROOT" && "$PY" -c 'from ragfr_tools.reranker.package import default_model; print(default_model().resolve())')}"
if [[ ! -f "$model/manifest.json" ]]; then
  echo "reranker build: no trained model at $model (make reranker trains it, about 70 min on 2 cores)" >&2
  exit 3
fi
ctx="$ROOT/.build/reranker-context"
rm -rf "$ctx"; mkdir -p "$ctx"
cp "$ROOT/images/reranker/Containerfile" "$ctx/"
commit="$("$PY" -m ragfr_tools.reranker.package --model "$model" --out "$ctx/hf-cache" | tail -1)"
chmod -R a+rX "$ctx/hf-cache"
if [[ $context_only == 1 ]]; then echo "$ctx"; exit 0; fi
tag="${tag:-localhost/ragfr-reranker:${commit:0:12}}"
"${PODMAN[@]}" build ${base:+--build-arg BASE="$base"} -t "$tag" -f "$ctx/Containerfile" "$ctx" >&2
echo "$tag"
