#!/usr/bin/env bash
# e2e.sh: runs the end-to-end suite (e2e/), the test bed's own tests on a
# real containerd test bed (hack/testbed) and the cluster's (a control plane
# and kubelets, hack/cluster), then vets the e2e-tagged code.
# `make e2e` runs it. The bed needs root: without it the suite is skipped
# with a message, unless CI is set, where that is a failure.
#
# Env: GO (default go), E2E_RUN (a -run pattern), E2E_PARALLEL (tests at once, default 3), E2E_TIMEOUT (default 50m: the suite takes 20-32 min on a loaded 2-core machine),
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

start=$(date +%s%N)
status=0
"$GO" test "${args[@]}" ./e2e/ ./internal/testbed/ ./internal/cluster/ || status=$?
ms=$((($(date +%s%N) - start) / 1000000))
"$GO" vet -tags e2e ./... || status=$?
verdict=passed
[ "$status" -eq 0 ] || verdict=FAILED
printf 'e2e: %s; suite wall time %d.%01ds\n' "$verdict" $((ms / 1000)) $((ms % 1000 / 100))
exit "$status"
