#!/usr/bin/env bash
# fuzz.sh TARGET PACKAGE: runs one fuzz target for FUZZTIME (make fuzz).
#
# Go's fuzzing coordinator can end a duration-bounded run with a bare
# "context deadline exceeded" when a worker is still inside a call as the
# time runs out (golang/go#75804, #51484): no input is at fault and none is
# written. Such a run is retried once. A run that writes a failing input,
# or fails any other way, fails at once.
set -uo pipefail

target=$1
pkg=$2
for attempt in 1 2; do
	out=$("${GO:-go}" test -run='^$' -fuzz="^${target}\$" -fuzztime="${FUZZTIME:-5s}" "$pkg" 2>&1)
	status=$?
	printf '%s\n' "$out"
	if [ "$status" -eq 0 ]; then
		exit 0
	fi
	if [ "$attempt" -eq 1 ] && grep -q 'context deadline exceeded' <<<"$out" &&
		! grep -q 'Failing input written' <<<"$out"; then
		echo "fuzz.sh: $target ended on the coordinator's deadline race with no failing input; once more" >&2
		continue
	fi
	exit "$status"
done
