#!/usr/bin/env bash
# env.sh DIR: prints shell exports for the control plane in DIR; use it as
#   eval "$(hack/cluster/env.sh DIR)"
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

dir=$(dir_arg "env.sh DIR" "$CLUSTER_MARKER" "$@")
cluster_paths "$dir"
[ -f "$CL_ENVFILE" ] || die "$CL_DIR has no control plane (no cluster.env); run up.sh first"
# shellcheck source=/dev/null
. "$CL_ENVFILE"
q() { printf '%q' "$1"; }
cat <<EOS
export PROBELET_CLUSTER_DIR=$(q "$CL_DIR")
export KUBECONFIG=$(q "$CL_ADMIN_KUBECONFIG")
export KUBE_APISERVER_URL=$(q "$APISERVER_URL")
export KUBE_CA_FILE=$(q "$CL_PKI/ca.crt")
export KUBECTL=$(q "$KUBECTL_BIN --kubeconfig $CL_ADMIN_KUBECONFIG")
export PROBELET_KUBECTL_BIN=$(q "$KUBECTL_BIN")
export PROBELET_KUBELET_BIN=$(q "$KUBELET_BIN")
EOS
