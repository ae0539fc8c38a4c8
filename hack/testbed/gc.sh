#!/usr/bin/env bash
# gc.sh [BASE]: tears down test beds (BASE/pbt-*, default /tmp) whose owner
# process is gone, e.g. after `go test` was killed by its timeout and never
# ran its cleanups (the rules: hack/lib/gc.sh).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

main() {
	cache_lock .gc.lock
	remove_abandoned "${1:-/tmp}" pbt- "$BED_MARKER" "test bed" "$TESTBED_HACK/down.sh"
}

main "$@"
