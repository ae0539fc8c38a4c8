# shellcheck shell=bash
# hoststate.sh: the host state a kubelet changes, saved before the first of
# our kubelets starts and restored after the last one stops. Sourced by
# kubelet.sh (after lib.sh); PROC_SYS and CONTAINER_LOGS are variables so
# the tests can point them at a scratch directory.
#
# The kubelet sets six sysctls at start (setupKernelTunables; protecting
# them instead makes it refuse to start) and creates /var/log/containers
# (hard-coded). Kubelets share one lease under the cache: the first saves
# the state, the last restores it, so a kubelet never has a value restored
# under it while it still relies on it.

SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes)
PROC_SYS=${PROC_SYS:-/proc/sys}
CONTAINER_LOGS=${CONTAINER_LOGS:-/var/log/containers}
HOST_STATE=$TESTBED_CACHE/.kubelet-host-state

# holder_file KDIR: the lease entry of one kubelet directory.
holder_file() { printf '%s/holders/%s\n' "$HOST_STATE" "$(printf '%s' "$1" | sha256sum | cut -c1-16)"; }

# host_lease_take KDIR: joins the lease, saving the host state if it is the first.
host_lease_take() {
	exec 7>"$HOST_STATE.lock"
	flock 7
	mkdir -p "$HOST_STATE/holders"
	prune_holders
	restore_if_unheld
	if [ -z "$(ls -A "$HOST_STATE/holders")" ]; then
		local s
		: >"$HOST_STATE/saved.tmp"
		for s in "${SYSCTLS[@]}"; do
			printf '%s %s\n' "$s" "$(cat "$PROC_SYS/$s")" >>"$HOST_STATE/saved.tmp"
		done
		[ -d "$CONTAINER_LOGS" ] || printf 'rmdir %s\n' "$CONTAINER_LOGS" >>"$HOST_STATE/saved.tmp"
		mv "$HOST_STATE/saved.tmp" "$HOST_STATE/saved"
	fi
	printf '%s\n' "$1" >"$(holder_file "$1")"
	exec 7>&-
}

# host_lease_drop KDIR: leaves the lease, restoring the saved state if it
# was the last holder.
host_lease_drop() {
	exec 7>"$HOST_STATE.lock"
	flock 7
	rm -f "$(holder_file "$1")"
	prune_holders
	restore_if_unheld
	exec 7>&-
}

# restore_if_unheld: restores the saved state once no holder is left.
restore_if_unheld() {
	[ -z "$(ls -A "$HOST_STATE/holders" 2>/dev/null)" ] && [ -f "$HOST_STATE/saved" ] || return 0
	local s v
	while read -r s v; do
		if [ "$s" = rmdir ]; then
			[ ! -d "$v" ] || rmdir "$v" 2>/dev/null || log "$v is not empty; leaving it"
		elif [ "$(cat "$PROC_SYS/$s")" != "$v" ]; then
			log "restoring ${s//\//.} = $v"
			printf '%s\n' "$v" >"$PROC_SYS/$s" || log "cannot restore ${s//\//.}"
		fi
	done <"$HOST_STATE/saved"
	rm -f "$HOST_STATE/saved"
}

# prune_holders: forgets holders whose kubelet directory is gone (removed
# by hand; if that was the last, the next take or drop restores); a
# directory that still exists keeps its claim until kubelet.sh down.
prune_holders() {
	local h
	for h in "$HOST_STATE"/holders/*; do
		[ -f "$h" ] || continue
		[ -d "$(cat "$h")" ] || rm -f "$h"
	done
}
