#!/usr/bin/env bash
# down.sh DIR: stops the test bed in DIR and removes every trace of it:
# pods, the runtime (containerd and its shims, or CRI-O and its conmons),
# containers, mounts, cgroups, the bridge
# and DIR itself. Touches only processes and objects of this bed, by PID and
# by name. Idempotent: safe on a half-started or already removed bed.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# remove_pods: lets the runtime stop and remove every pod while it still runs,
# so shims, mounts and CNI state go away the normal way.
remove_pods() {
	runtime_pid >/dev/null || return 0
	crictl_bed rmp --all --force >/dev/null 2>&1 || log "removing pods failed; cleaning up by force"
}

# stop_runtime: SIGTERM, SIGKILL after 10 s; one that survives even that
# is left to the steps after it (shims, runc, cgroups).
stop_runtime() { stop_pid "$BED_PIDFILE" "$BED_CONFIG" "$BED_RUNTIME" || true; }

# kill_conmons: kills CRI-O's container monitors of this bed: conmon
# processes whose exit directory is this bed's.
kill_conmons() {
	local p pid
	while read -r p; do
		pid=${p#/proc/}
		pid=${pid%/cmdline}
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = conmon ] || continue
		log "killing leftover conmon $pid"
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" 5 || true
	done < <(grep -laF -- "$BED_DIR/run/exits" /proc/[0-9]*/cmdline 2>/dev/null || true)
}

# shim_arg PID NAME: the value after flag NAME in PID's command line, empty
# when PID has exited meanwhile (shims exit on their own as their
# containers die: with pipefail a vanished /proc entry must not end the
# script).
shim_arg() { { tr '\0' '\n' <"/proc/$1/cmdline"; } 2>/dev/null | grep -A1 -xF -- "$2" | sed -n 2p || true; }

# kill_shims: kills shims whose -address is this bed's socket, and removes
# their sockets under /run/containerd/s (named by sha256 of address/ns/id).
kill_shims() {
	local p pid ns id sum
	# One grep narrows /proc to candidates; shim_arg then matches exactly.
	while read -r p; do
		pid=${p#/proc/}
		pid=${pid%/cmdline}
		[ "$(shim_arg "$pid" -address)" = "$BED_SOCK" ] || continue
		ns=$(shim_arg "$pid" -namespace) id=$(shim_arg "$pid" -id)
		[ -n "$ns" ] && [ -n "$id" ] || continue # gone meanwhile
		log "killing leftover shim $pid ($ns/$id)"
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" 5 || true
		sum=$(printf '%s' "$BED_SOCK/$ns/$id" | sha256sum | cut -c1-64)
		rm -f "/run/containerd/s/$sum" "/run/containerd/s/$(printf '%s' "$BED_SOCK/$ns/$id/debug" | sha256sum | cut -c1-64)"
	done < <(grep -laF -- "$BED_SOCK" /proc/[0-9]*/cmdline 2>/dev/null || true)
}

# kill_containers: force-deletes runc containers left in this bed's runc roots.
kill_containers() {
	local root id
	for root in "$BED_DIR"/runc/*/; do
		[ -d "$root" ] || continue
		for id in $("$RUNC_BIN" --root "$root" list -q 2>/dev/null); do
			"$RUNC_BIN" --root "$root" delete --force "$id" >/dev/null 2>&1 || log "runc delete $id failed"
		done
	done
}

# bed_cgroups: this bed's cgroup directories, deepest first.
bed_cgroups() {
	find /sys/fs/cgroup -maxdepth 2 -type d \( -name "${BED_CGROUP_PARENT#/}" -o -name "${BED_RUNTIME_CGROUP#/}" \) -print 2>/dev/null |
		while read -r d; do find "$d" -depth -type d; done
}

# remove_cgroups: kills any process still in this bed's cgroups, then removes them.
remove_cgroups() {
	local d pid
	for d in $(bed_cgroups); do
		while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done 2>/dev/null <"$d/cgroup.procs" || true
	done
	for d in $(bed_cgroups); do
		rmdir "$d" 2>/dev/null || sleep 0.2
		[ ! -d "$d" ] || rmdir "$d" 2>/dev/null || log "cannot remove cgroup $d"
	done
}

remove_network() {
	if [ -e "/sys/class/net/$BED_BRIDGE" ]; then
		ip link del "$BED_BRIDGE" || die "cannot delete bridge $BED_BRIDGE"
	fi
	rm -f /var/lib/cni/results/"$BED_NETWORK"-*
}

main() {
	local dir
	dir=$(dir_arg "down.sh DIR" "$BED_MARKER" "$@")
	bed_paths "$dir"
	if [ -d "$BED_DIR" ]; then
		remove_pods
		stop_runtime
		kill_shims
		kill_conmons
		kill_containers
		remove_cgroups
		unmount_all "$BED_DIR"
	fi
	remove_network
	remove_cgroups
	[ ! -d "$BED_DIR" ] || rm -rf --one-file-system "$BED_DIR"
	log "test bed $BED_DIR is down"
}

main "$@"
