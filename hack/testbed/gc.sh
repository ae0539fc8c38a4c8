#!/usr/bin/env bash
# gc.sh [BASE]: tears down test beds under BASE (default /tmp) whose owner
# process is gone, e.g. after `go test` was killed by its timeout and never
# ran its cleanups. A bed's DIR/owner file holds "PID STARTTIME" of the test
# process; beds without one (started by hand) and directories without the
# bed marker are left alone.
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

main() {
	local base=${1:-/tmp} d
	mkdir -p "$TESTBED_CACHE"
	exec 9>"$TESTBED_CACHE/.gc.lock"
	flock 9
	for d in "$base"/pbt-*/; do
		d=${d%/}
		if [ ! -f "$d/owner" ] || [ ! -e "$d/$BED_MARKER" ]; then continue; fi
		owner_alive "$d" && continue
		log "removing abandoned test bed $d (owner $(cat "$d/owner" 2>/dev/null) is gone)"
		"$TESTBED_HACK/down.sh" "$d" || log "could not remove $d"
	done
}

main "$@"
