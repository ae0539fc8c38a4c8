#!/usr/bin/env bash
# gc.sh [BASE]: tears down kubelets (BASE/pkl-*) and control planes
# (BASE/pkc-*) whose owning test process is gone, e.g. after `go test` was
# killed by its timeout and never ran its cleanups. DIR/owner holds "PID
# STARTTIME" of the test process (internal/cluster writes it); directories
# without one (started by hand) or without their marker are left alone.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# owner_alive DIR: whether the process named in DIR/owner still runs (the
# start time guards against a reused PID).
owner_alive() {
	local pid start stat
	read -r pid start 2>/dev/null <"$1/owner" || return 1
	read -r stat 2>/dev/null <"/proc/$pid/stat" || return 1
	stat=${stat##*) }
	# shellcheck disable=SC2086
	set -- $stat
	[ "$1" != Z ] && [ "${20}" = "$start" ]
}

# abandoned BASE PREFIX MARKER: directories of that kind whose owner is gone.
abandoned() {
	local d
	for d in "$1/$2"-*/; do
		d=${d%/}
		if [ ! -f "$d/owner" ] || [ ! -e "$d/$3" ]; then continue; fi
		owner_alive "$d" || printf '%s\n' "$d"
	done
}

main() {
	local base=${1:-/tmp} d
	mkdir -p "$TESTBED_CACHE"
	exec 9>"$TESTBED_CACHE/.cluster-gc.lock"
	flock 9
	# Kubelets first: they talk to the control planes.
	for d in $(abandoned "$base" pkl "$KUBELET_MARKER"); do
		log "removing abandoned kubelet $d (owner $(cat "$d/owner" 2>/dev/null) is gone)"
		"$CLUSTER_HACK/kubelet.sh" down "$d" || log "could not remove $d"
	done
	for d in $(abandoned "$base" pkc "$CLUSTER_MARKER"); do
		log "removing abandoned control plane $d (owner $(cat "$d/owner" 2>/dev/null) is gone)"
		"$CLUSTER_HACK/down.sh" "$d" || log "could not remove $d"
	done
}

main "$@"
