# shellcheck shell=bash
# dirs.sh: the directories the scripts run things in (a test bed, a control
# plane, a kubelet): guarded by a marker file, unmounted before removal.
# Needs log.sh.

# marked_dir MARKER ARG: ARG as a normalized absolute directory; never /,
# never an existing directory that is neither empty nor marked with MARKER,
# so a wrong argument never makes a script start in, or delete, someone
# else's directory. Call it in a plain assignment (dir=$(marked_dir ...))
# so set -e sees a failure.
marked_dir() {
	local marker=$1 d
	[ -n "$2" ] || die "empty directory argument"
	d=$(realpath -m -- "$2")
	[ "$d" != / ] || die "refusing / as a directory"
	if [ -d "$d" ] && [ -n "$(ls -A -- "$d")" ] && [ ! -e "$d/$marker" ]; then
		die "$d has no $marker; not touching it"
	fi
	printf '%s\n' "$d"
}

# dir_arg USAGE MARKER ARGS...: the one directory in ARGS, through
# marked_dir; dies with "usage: USAGE" unless there is exactly one. Call it
# in a plain assignment too.
dir_arg() {
	local usage=$1 marker=$2
	shift 2
	[ $# -eq 1 ] || die "usage: $usage"
	marked_dir "$marker" "$1"
}

# mounts_under DIR: mount points at or under DIR, deepest first (mountinfo
# field 5, octal escapes decoded).
mounts_under() {
	local m
	awk '{print $5}' /proc/self/mountinfo | while read -r m; do
		printf -v m '%b' "$m"
		case $m in "$1" | "$1"/*) printf '%s %s\n' "${#m}" "$m" ;; esac
	done | sort -rn | cut -d' ' -f2-
}

# unmount_all DIR: unmounts everything at or under DIR (lazily if busy),
# and fails if something stays mounted.
unmount_all() {
	local m
	for _ in 1 2 3; do
		[ -n "$(mounts_under "$1")" ] || return 0
		while read -r m; do
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done <<<"$(mounts_under "$1")"
	done
	[ -z "$(mounts_under "$1")" ] || die "mounts left under $1: $(mounts_under "$1" | tr '\n' ' ')"
}
