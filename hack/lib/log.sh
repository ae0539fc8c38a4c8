# shellcheck shell=bash
# log.sh: the scripts' messages, on stderr and prefixed with LOG_PREFIX
# (testbed, cluster) so a test's output says which scripts spoke.

log() { printf '%s: %s\n' "${LOG_PREFIX:-probelet}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
