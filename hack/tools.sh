#!/usr/bin/env bash
# tools.sh NAME: installs a Go tool the build uses, pinned, into a cache
# keyed by version, and prints its path. Idempotent: a cached tool is only
# checked. Tools come from the Go module proxy like everything else.
set -euo pipefail

STATICCHECK_VERSION=v0.8.2
# Helm lints and renders deploy/helm/probelet (make test) and installs it
# in the e2e suite.
HELM_VERSION=v3.22.0

CACHE=${PROBELET_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/probelet-tools}

die() { printf 'tools: ERROR: %s\n' "$*" >&2; exit 1; }

# install MODULE/PKG VERSION BINARY: go install into CACHE/BINARY@VERSION.
install() {
	local pkg=$1 version=$2 bin=$3 dir
	dir=$CACHE/$bin@$version
	if [ ! -x "$dir/$bin" ]; then
		mkdir -p "$dir"
		printf 'tools: installing %s %s\n' "$bin" "$version" >&2
		GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=mod GOBIN=$dir go install "$pkg@$version" >&2 ||
			die "go install $pkg@$version failed"
	fi
	printf '%s\n' "$dir/$bin"
}

case ${1:-} in
staticcheck) install honnef.co/go/tools/cmd/staticcheck "$STATICCHECK_VERSION" staticcheck ;;
helm) install helm.sh/helm/v3/cmd/helm "$HELM_VERSION" helm ;;
*) die "usage: $0 staticcheck|helm" ;;
esac
