# shellcheck shell=bash
# Sourced by the project's scripts: the one definition of what they share. Sets ROOT (the checkout, unless
# the caller exported one) and defines:
#   PG_MAJOR, PG_LIB_SUBDIR, PG_SHARE_SUBDIR   where PostgreSQL lives below / or below a relocated root
#   free_port                                  a free TCP port on 127.0.0.1 (races are the caller's to retry)
#   kubeconfig_present                         true when kubectl would find a cluster to talk to
ROOT="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
PG_MAJOR=15
PG_LIB_SUBDIR="usr/lib/postgresql/$PG_MAJOR"
PG_SHARE_SUBDIR="usr/share/postgresql/$PG_MAJOR"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# The same places kubectl looks: $KUBECONFIG's files, ~/.kube/config, or a pod's service account.
kubeconfig_present() {
  if [[ -n "${KUBECONFIG:-}" ]]; then
    local IFS=:
    local f
    for f in $KUBECONFIG; do [[ -f "$f" ]] && return 0; done
    return 1
  fi
  [[ -f "$HOME/.kube/config" || -f /var/run/secrets/kubernetes.io/serviceaccount/token ]]
}
