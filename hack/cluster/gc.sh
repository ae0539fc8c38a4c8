#!/usr/bin/env bash
# gc.sh [BASE]: tears down kubelets (BASE/pkl-*) and control planes
# (BASE/pkc-*, default /tmp) whose owning test process is gone, e.g. after
# `go test` was killed by its timeout and never ran its cleanups (the rules:
# hack/lib/gc.sh).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

main() {
	local base=${1:-/tmp}
	cache_lock .cluster-gc.lock
	# Kubelets first: they talk to the control planes.
	remove_abandoned "$base" pkl- "$KUBELET_MARKER" kubelet "$CLUSTER_HACK/kubelet.sh" down
	remove_abandoned "$base" pkc- "$CLUSTER_MARKER" "control plane" "$CLUSTER_HACK/down.sh"
}

main "$@"
