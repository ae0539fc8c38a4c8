# shellcheck shell=bash
# gc.sh: removes the directories whose owning test process is gone, e.g.
# after `go test` was killed by its timeout and never ran its cleanups.
# DIR/owner holds "PID STARTTIME" of that process (internal/testbed/harness
# writes it); directories without one (started by hand) or without their
# marker are left alone. Needs log.sh.

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

# remove_abandoned BASE PREFIX MARKER NOUN DOWN...: runs DOWN... DIR on
# every BASE/PREFIX* marked with MARKER whose owner is gone; NOUN names one
# in the log.
remove_abandoned() {
	local base=$1 prefix=$2 marker=$3 noun=$4 d
	shift 4
	for d in "$base/$prefix"*/; do
		d=${d%/}
		if [ ! -f "$d/owner" ] || [ ! -e "$d/$marker" ]; then continue; fi
		owner_alive "$d" && continue
		log "removing abandoned $noun $d (owner $(cat "$d/owner" 2>/dev/null) is gone)"
		"$@" "$d" || log "could not remove $d"
	done
}
