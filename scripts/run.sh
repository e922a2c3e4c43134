#!/usr/bin/env bash
# `make run`, the main job: deploy the whole stack to the current Kubernetes context; on a machine with no
# cluster configured, run the same stack locally (`make up`: private PostgreSQL + pgvector, migrations, the
# patched Open WebUI on http://127.0.0.1:8080, Ollama or the offline e5 test double).
# The kubeconfig is kubectl's ($KUBECONFIG, ~/.kube/config), or on a k3s server node k3s's own
# (/etc/rancher/k3s/k3s.yaml, scripts/lib.sh). A kubeconfig that points at a cluster which does not answer is an
# error, not a silent local fallback; so is VALUES without any cluster: those values are a cluster's.
# On a cluster the merged VALUES files (e.g. VALUES=my-values.yaml) say where the nodes get the ragfr images:
# global.imageRegistry -> built here (unless current), pushed there (IMAGES_TLS_VERIFY=false for plain HTTP), then
# deployed; global.imageSource=imported -> on a k3s node, built and imported into its containerd, elsewhere
# trusted; neither -> one line naming both, exit 2, nothing built or applied.
# RUN_BUILD=0 uses the images built earlier (`make images`) even if the checkout changed since.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
if kubeconfig_present; then
  echo "run: a Kubernetes context is configured: deploying charts/ragfr to it (VALUES=${VALUES:-none})"
  # Where the nodes get the ragfr images, from the merged VALUES, decided before anything is built or applied:
  # the images are on no public registry, so a release that names neither way could not start.
  PY="${PY:-$ROOT/.venv/bin/python}"
  for f in ${VALUES:-}; do [[ -f "$f" ]] || { echo "run: values file not found: $f" >&2; exit 2; }; done
  # shellcheck disable=SC2086  # VALUES is a space-separated list of files, as for make deploy
  if ! source_line="$("$PY" -m ragfr_tools.imagesource ${VALUES:-} 2>&1)"; then
    echo "run: $source_line" >&2
    exit 2
  fi
  # A configured cluster that does not answer (k3s stopped, a stale kubeconfig): one line now, not after minutes of
  # building, pushing or importing for it. No helm SDK in $PY: deploy.sh's own check will say it.
  if "$PY" -c 'import helm_python' 2>/dev/null \
      && ! why="$("$PY" -m ragfr_tools.deploy --reachable "${KUBE_CONTEXT:-}" 2>&1)"; then
    echo "run: ${why##*$'\n'}; nothing was built, pushed or applied" >&2
    exit 2
  fi
  build_if_stale() {
    if [[ "${RUN_BUILD:-1}" == 0 ]]; then
      echo "run: RUN_BUILD=0: the images built earlier are used as they are"
    elif bash scripts/images.sh current; then
      echo "run: the images of .build/images.built were built from this checkout: not rebuilt"
    else
      make --no-print-directory images
    fi
  }
  case "$source_line" in
    registry\ *)
      registry="${source_line#registry }"
      echo "run: images: build here, push to $registry (global.imageRegistry), then deploy"
      build_if_stale
      bash scripts/images.sh push "$registry"
      ;;
    imported)
      if command -v k3s >/dev/null 2>&1; then
        # A k3s server node: import into its own containerd, under the names the chart renders.
        echo "run: images: global.imageSource=imported on a k3s node: build here and import with k3s ctr images import"
        build_if_stale
        archives="$(mktemp -d)"
        IMAGES_UPSTREAM=0 bash scripts/images.sh save "$archives" >/dev/null
        for f in "$archives"/*.oci.tar; do k3s ctr images import "$f"; done
        rm -rf "$archives"
        echo "run: imported on this node only: every other node that may run a ragfr pod needs the same import (docs/install.md step 2)"
      else
        echo "run: images: global.imageSource=imported: trusting that every node's containerd holds them (docs/install.md step 2); a node that misses one shows ErrImageNeverPull"
      fi
      ;;
  esac
  exec make --no-print-directory deploy
fi
# VALUES are a cluster's values (images, nodes, exposure): the local stack would ignore every one of them.
if [[ -n "${VALUES:-}" ]]; then
  echo "run: VALUES=$VALUES is for a cluster, but $(kubeconfig_absence): nothing was built, applied or started (without VALUES, make run starts the local stack)" >&2
  exit 2
fi
echo "run: no Kubernetes cluster configured: starting the local stack (make up); make down stops it"
exec make --no-print-directory up
