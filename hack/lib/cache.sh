# shellcheck shell=bash
# cache.sh: the build cache the test bed's and the cluster's scripts share
# (one directory per component@version, see build.sh) and the host-wide
# locks kept in it.

TESTBED_CACHE=${PROBELET_TESTBED_CACHE:-/var/cache/probelet-testbed}

# cache_lock NAME: takes the lock $TESTBED_CACHE/NAME on fd 9 and holds it
# until the script exits.
cache_lock() {
	mkdir -p "$TESTBED_CACHE"
	exec 9>"$TESTBED_CACHE/$1"
	flock 9
}
