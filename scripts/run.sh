#!/usr/bin/env bash
# `make run`, the main job: deploy the whole stack to the current Kubernetes context; on a machine with no
# cluster configured, run the same stack locally (`make up`: private PostgreSQL + pgvector, migrations, the
# patched Open WebUI on http://127.0.0.1:8080, Ollama or the offline e5 test double).
# A kubeconfig that points at a cluster which does not answer is an error, not a silent local fallback.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
if kubeconfig_present; then
  echo "run: a Kubernetes context is configured: deploying charts/ragfr to it (make deploy)"
  exec make --no-print-directory deploy
fi
echo "run: no Kubernetes cluster configured: starting the local stack (make up); make down stops it"
exec make --no-print-directory up
