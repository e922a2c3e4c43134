#!/usr/bin/env bash
# `make deploy`: helm upgrade --install of charts/ragfr into the CURRENT kube context.
# Uses a `helm` binary when one is on PATH; otherwise the Helm v4 library bundled in helm-python-sdk
# (.venv, `make setup-venv`), which performs the same upgrade-or-install. Stops with one clear line when
# there is no helm at all, no kubeconfig, or the cluster does not answer; nothing is half-applied then.
#
# Env: RELEASE (ragfr), NAMESPACE (ragfr), VALUES (extra values files, space separated, e.g.
#      charts/ragfr/examples/gpu.yaml), TIMEOUT (seconds to wait for the release to be ready, 1200),
#      KUBECONFIG / KUBE_CONTEXT (which cluster; default: kubectl's current context, or k3s's
#      /etc/rancher/k3s/k3s.yaml on a k3s server node without another kubeconfig).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
PY="${PY:-$ROOT/.venv/bin/python}"
CHART="$ROOT/charts/ragfr"
RELEASE="${RELEASE:-ragfr}"
NAMESPACE="${NAMESPACE:-ragfr}"
VALUES="${VALUES:-}"
TIMEOUT="${TIMEOUT:-1200}"
KUBE_CONTEXT="${KUBE_CONTEXT:-}"
die() { echo "deploy: $*" >&2; exit 2; }

for f in $VALUES; do [[ -f "$f" ]] || die "values file not found: $f"; done

kubeconfig_present || die "$(kubeconfig_absence): nothing deployed. Point kubectl at a cluster first; to see what would be applied without one: make chart-render"

if command -v helm >/dev/null 2>&1; then
  args=(upgrade --install "$RELEASE" "$CHART" --namespace "$NAMESPACE" --create-namespace
        --wait --timeout "${TIMEOUT}s")
  [[ -n "$KUBE_CONTEXT" ]] && args+=(--kube-context "$KUBE_CONTEXT")
  for f in $VALUES; do args+=(-f "$f"); done
  echo "deploy: helm ${args[*]}"
  exec helm "${args[@]}"
fi

"$PY" -c 'import helm_python' 2>/dev/null \
  || die "no helm: neither a helm binary on PATH nor helm-python-sdk in $PY (run: make setup-venv, or install helm)"

echo "deploy: no helm binary; using the Helm library of helm-python-sdk ($CHART -> release $RELEASE in namespace $NAMESPACE)"
exec "$PY" -m ragfr_tools.deploy "$CHART" "$RELEASE" "$NAMESPACE" "$TIMEOUT" "$KUBE_CONTEXT" $VALUES
