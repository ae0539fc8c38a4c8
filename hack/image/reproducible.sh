#!/usr/bin/env bash
# reproducible.sh [build.sh flags]: builds the image twice, once from this
# tree with the usual Go build cache and once from a copy of the tree at
# another path with an empty build cache, and fails unless the two digests
# are the same. Prints both. The second build compiles everything for every
# platform: minutes on two cores.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../testbed/lib.sh
. "$(dirname "$0")/../testbed/lib.sh"
log() { printf 'image: %s\n' "$*" >&2; }

REPO=$(cd "$(dirname "$0")/../.." && pwd)

main() {
	local first second
	# Global: the EXIT trap runs after main has returned.
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/probelet-repro.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT
	local work=$WORK
	first=$("$REPO/hack/image/build.sh" "$@" --out "$work/first.tar" | sed -n 's/^digest=//p')
	# The copy holds what git would commit now: tracked and untracked files,
	# ignored ones (bin/, test binaries) left out.
	mkdir -p "$work/src/copy"
	(cd "$REPO" && git ls-files -z --cached --others --exclude-standard |
		tar --null -T - -cf -) | tar -xf - -C "$work/src/copy"
	log "second build in $work/src/copy with an empty Go build cache"
	second=$(GOCACHE="$work/gocache" "$work/src/copy/hack/image/build.sh" "$@" --out "$work/second.tar" | sed -n 's/^digest=//p')
	printf 'first=%s\nsecond=%s\n' "$first" "$second"
	[ -n "$first" ] && [ "$first" = "$second" ] || die "the two builds differ: $first vs $second"
	cmp -s "$work/first.tar" "$work/second.tar" || die "same digest but the archives differ"
	log "reproducible: $first"
}

main "$@"
