# shellcheck shell=bash
# Sourced by the project's scripts: the one definition of what they share. Sets ROOT (the checkout, unless
# the caller exported one) and defines:
#   PG_MAJOR, PG_LIB_SUBDIR, PG_SHARE_SUBDIR   where PostgreSQL lives below / or below a relocated root
#   free_port                                  a free TCP port on 127.0.0.1 (races are the caller's to retry)
#   kubeconfig_present                         true when kubectl would find a cluster to talk to (k3s's file too)
#   kubeconfig_absence                         why not, for a refusal line
ROOT="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
PG_MAJOR=15
PG_LIB_SUBDIR="usr/lib/postgresql/$PG_MAJOR"
PG_SHARE_SUBDIR="usr/share/postgresql/$PG_MAJOR"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Where k3s writes its administrator kubeconfig, on a server node. RAGFR_K3S_KUBECONFIG moves it for the tests only
# (tests/chart/test_deploy.py): they must not read or depend on a real /etc/rancher.
K3S_KUBECONFIG="${RAGFR_K3S_KUBECONFIG:-/etc/rancher/k3s/k3s.yaml}"

# The same places kubectl looks: $KUBECONFIG's files, ~/.kube/config, or a pod's service account; then, as k3s's
# own `k3s kubectl` does on a server node, /etc/rancher/k3s/k3s.yaml. That one is exported as KUBECONFIG, so the
# helm and kubectl that `make deploy` runs next talk to the same cluster. A k3s file this user may not read
# (root-only, k3s's default mode 600) counts as absent: K3S_KUBECONFIG_UNREADABLE=1 lets the caller say why.
kubeconfig_present() {
  K3S_KUBECONFIG_UNREADABLE=0
  if [[ -n "${KUBECONFIG:-}" ]]; then
    local IFS=:
    local f
    for f in $KUBECONFIG; do [[ -f "$f" ]] && return 0; done
    return 1
  fi
  [[ -f "$HOME/.kube/config" || -f /var/run/secrets/kubernetes.io/serviceaccount/token ]] && return 0
  if [[ -f "$K3S_KUBECONFIG" ]]; then
    if [[ -r "$K3S_KUBECONFIG" ]]; then
      export KUBECONFIG="$K3S_KUBECONFIG"
      return 0
    fi
    K3S_KUBECONFIG_UNREADABLE=1
  fi
  return 1
}

# Why kubeconfig_present said no, in the words of one refusal line.
kubeconfig_absence() {
  if [[ "${K3S_KUBECONFIG_UNREADABLE:-0}" == 1 ]]; then
    echo "no readable kubeconfig: this user may not read k3s's $K3S_KUBECONFIG (k3s writes it for root only), and there is no KUBECONFIG file nor ~/.kube/config; run as root (sudo make ...) or copy it to ~/.kube/config (docs/reference/kubeconfig.md, \"Kubeconfig from the k3s server\")"
  else
    echo "no Kubernetes cluster configured (no KUBECONFIG file, no ~/.kube/config, no $K3S_KUBECONFIG, not in a pod)"
  fi
}
