#!/usr/bin/env bash
# e2e.sh: runs the end-to-end suite (e2e/), the test bed's own tests on a
# real containerd test bed (hack/testbed) and the cluster's (a control plane
# and kubelets, hack/cluster), then vets the e2e-tagged code.
# `make e2e` runs it. The bed needs root: without it the suite is skipped
# with a message, unless CI is set, where that is a failure.
#
# Env: GO (default go), E2E_RUN (a -run pattern), E2E_SKIP (a -skip pattern), E2E_PARALLEL (tests at once, default 3), E2E_TIMEOUT (default 50m: the suite takes 20-32 min on a loaded 2-core machine), E2E_VET=0 (no go vet of the e2e-tagged code after the suite),
# PROBELET_TESTBED_KEEP=1 keeps a failed test's bed for inspection.
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}

# shellcheck source=hack/lib/ci.sh
. hack/lib/ci.sh

if [ "$(id -u)" -ne 0 ]; then
	if ci_set; then
		echo "e2e: FAIL: e2e needs root (it starts containerd, runc, CNI and eBPF); CI=$CI requires it to run" >&2
		exit 1
	fi
	echo "e2e: skipped: e2e needs root (it starts a private containerd test bed). Run 'sudo make e2e' to run it."
	exit 0
fi

# The tests fail instead of skipping when the bed cannot start.
export PROBELET_E2E=1
# Three parallel tests at once, not GOMAXPROCS' two: most of them wait on
# probe periods and control planes, and the serial ones (each a victim's
# timing under an attack) run alone before them either way.
args=(-tags e2e -count=1 -timeout "${E2E_TIMEOUT:-50m}" -parallel "${E2E_PARALLEL:-3}")
if [ -n "${E2E_RUN:-}" ]; then
	args+=(-run "$E2E_RUN")
fi
if [ -n "${E2E_SKIP:-}" ]; then
	args+=(-skip "$E2E_SKIP")
fi

start=$(date +%s%N)
status=0
# Verbose into a file, so that the time of every test can be reported (the
# suite's budget is CI's); on a failure the failing tests' lines and the
# log's end follow, as go test would print them.
log=$(mktemp "${TMPDIR:-/tmp}/probelet-e2e.XXXXXX.log")
"$GO" test -v "${args[@]}" ./e2e/ ./internal/testbed/ ./internal/cluster/ >"$log" 2>&1 || status=$?
ms=$((($(date +%s%N) - start) / 1000000))
echo "e2e: the slowest tests (the serial ones run first, alone; then ${E2E_PARALLEL:-3} at once):"
grep -E '^--- (PASS|FAIL|SKIP)' "$log" | sed -E 's/^--- ([A-Z]+): ([^ ]+) \(([0-9.]+)s\)/\3 \1 \2/' | sort -rn | head -20 |
	awk '{printf "  %7.1fs  %s %s\n", $1, $2, $3}' || true
grep -E '^(ok|FAIL|---) ' "$log" | grep -v -- '--- PASS' || true
if [ "$status" -ne 0 ]; then
	# Each failing test's own lines (verbose output names the test it
	# continues with), then the end of the log (a panic or a timeout).
	echo "e2e: the output of each failing test ($log):"
	awk '/^=== (RUN|CONT|NAME) /{cur=$3; sub(/\/.*/, "", cur)} /^--- FAIL: /{fail[$3]=1}
		{if (cur != "") out[cur] = out[cur] $0 "\n"} END {for (t in fail) printf "%s", out[t]}' "$log"
	echo "e2e: the last 60 lines of the suite's output:"
	tail -n 60 "$log"
else
	rm -f "$log"
fi
# make test vets every tag once in its lint step: E2E_VET=0 skips it here.
if [ "${E2E_VET:-1}" != 0 ]; then
	"$GO" vet -tags e2e ./... || status=$?
fi
verdict=passed
[ "$status" -eq 0 ] || verdict=FAILED
printf 'e2e: %s; suite wall time %d.%01ds\n' "$verdict" $((ms / 1000)) $((ms % 1000 / 100))
exit "$status"
