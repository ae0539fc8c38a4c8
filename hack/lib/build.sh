# shellcheck shell=bash
# build.sh: what hack/testbed/build.sh and hack/cluster/build.sh share:
# Debian packages installed when missing, Go built outside this repository's
# module, and components built once into the cache by version. Needs log.sh
# and cache.sh.

# go_env: a Go environment that never touches the repository's go.mod.
go_env() {
	export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-buildvcs=false
	export PATH=/usr/local/go/bin:$PATH
}

# install_packages PKG...: installs the Debian packages that are missing.
install_packages() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" -eq 0 ] || die "missing packages ${missing[*]} and not root to install them"
	log "installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# build_component DIR DESC FUNC: runs FUNC OUT_BIN_DIR in a fresh directory
# unless DIR is complete (its .complete stamp), then moves the result into
# place atomically so a killed build leaves no half dir. Callers hold the
# build lock (cache_lock .lock): concurrent runs wait for one build.
build_component() {
	local dir=$1 desc=$2 fn=$3
	[ -f "$dir/.complete" ] && return 0
	local tmp
	tmp=$(mktemp -d "$TESTBED_CACHE/.build.XXXXXX")
	log "building $desc"
	local start=$SECONDS
	mkdir -p "$tmp/bin"
	# The Go module cache's files are read-only: make them removable.
	( cd "$tmp" && "$fn" "$tmp/bin" ) || { chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"; die "building $desc failed"; }
	printf '%s built %s with %s\n' "$desc" "$(date -u +%FT%TZ)" "$(go version)" >"$tmp/.complete"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	log "built $desc in $((SECONDS - start))s"
}

# require_built BIN...: fails unless every BIN is an executable.
require_built() {
	local b
	for b in "$@"; do
		[ -x "$b" ] || die "$b is missing; remove its cache dir and re-run"
	done
}
