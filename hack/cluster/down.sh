#!/usr/bin/env bash
# down.sh DIR: stops the control plane in DIR (controller manager, API
# server, etcd, by PID) and removes DIR. Only a directory marked by up.sh is
# removed. Idempotent: safe on a half-started or already removed cluster.
# Kubelets registered to it are separate (kubelet.sh down); stop them first.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

main() {
	local dir
	dir=$(dir_arg "down.sh DIR" "$CLUSTER_MARKER" "$@")
	cluster_paths "$dir"
	[ -d "$CL_DIR" ] || { log "$CL_DIR does not exist; nothing to do"; return 0; }
	stop_pid "$CL_DIR/kube-controller-manager.pid" "$CL_KCM_KUBECONFIG" kube-controller-manager
	stop_pid "$CL_DIR/kube-apiserver.pid" "$CL_PKI/apiserver.crt" kube-apiserver
	stop_pid "$CL_DIR/etcd.pid" "$CL_ETCD_DATA" etcd
	rm -rf --one-file-system "$CL_DIR"
	log "control plane $CL_DIR is down"
}

main "$@"
