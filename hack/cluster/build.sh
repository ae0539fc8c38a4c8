#!/usr/bin/env bash
# build.sh: builds kube-apiserver, kube-controller-manager, kubectl and
# kubelet of Kubernetes $KUBERNETES_VERSION and etcd $ETCD_VERSION from the
# Go module proxy into the versioned cache shared with hack/testbed, and
# prints their paths. Idempotent: finished components are only checked.
# A cold build takes 10-13 minutes on 2 cores; run it under
# `flock /tmp/probelet-heavy.lock` when other heavy jobs share the machine.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

APT_PACKAGES=(openssl curl jq iproute2 util-linux)

# download MODULE@VERSION...: downloads the modules (in parallel) and prints
# "PATH DIR" per module. The proxy serves them; the checksum database does
# not know every k8s.io version, hence GONOSUMDB.
download() {
	GOFLAGS=-mod=mod GONOSUMDB='k8s.io/*' go mod download -json "$@" |
		jq -r 'if .Error then error(.Path + "@" + .Version + ": " + .Error) else .Path + " " + .Dir end'
}

# UNSERVED_STAGING: staging modules in go.work that the proxy does not serve
# at the matching version (checked for v1.37.2) and that no binary needs;
# they are dropped from go.work. k8s.io/sample-apiserver is served and stays:
# k8s.io/kubernetes' go.mod requires it.
UNSERVED_STAGING=(sample-cli-plugin sample-controller)

# assemble_kubernetes: k8s.io/kubernetes' module zip lacks staging/, which
# its go.work uses: fill staging/src/k8s.io/NAME from k8s.io/NAME at the
# matching v0 version.
assemble_kubernetes() {
	local src=$PWD/src dir mods=() m path dirs
	dir=$(download "k8s.io/kubernetes@$KUBERNETES_VERSION" | cut -d' ' -f2)
	cp -r "$dir" "$src"
	chmod -R u+w "$src"
	for m in "${UNSERVED_STAGING[@]}"; do
		(cd "$src" && GOWORK="$src/go.work" go work edit -dropuse "./staging/src/k8s.io/$m")
	done
	for m in $(cd "$src" && GOWORK="$src/go.work" go work edit -json | jq -r '.Use[].DiskPath' | sed -n 's|^\./staging/src/||p'); do
		mods+=("$m@$KUBE_STAGING_VERSION")
	done
	[ ${#mods[@]} -gt 20 ] || die "go.work names only ${#mods[@]} staging modules"
	dirs=$(download "${mods[@]}") # not in a process substitution: a failure must stop us
	while read -r path dir; do
		mkdir -p "$src/staging/src/$path"
		cp -r "$dir/." "$src/staging/src/$path/"
	done <<<"$dirs"
	chmod -R u+w "$src/staging"
}

# kube_ldflags: the version stamps Kubernetes' own build sets
# (hack/lib/version.sh), so `kubectl version` and /version tell the truth;
# -s -w as in its release builds.
kube_ldflags() {
	local minor=${KUBERNETES_VERSION#v1.} f=() kv k v
	minor=${minor%%.*}
	for kv in "gitVersion=$KUBERNETES_VERSION" gitMajor=1 "gitMinor=$minor" gitTreeState=clean \
		"buildDate=$(date -u +%FT%TZ)"; do
		k=${kv%%=*} v=${kv#*=}
		f+=("-X 'k8s.io/client-go/pkg/version.$k=$v'" "-X 'k8s.io/component-base/version.$k=$v'")
	done
	printf 'all=%s -s -w' "${f[*]}"
}

# build_kubernetes BIN: one go build for the four commands shares their
# packages (kubelet alone is ~4 min; after the others, seconds).
build_kubernetes() {
	local src=$KUBERNETES_SRC_DIR/src
	(cd "$src" && GOWORK="$src/go.work" GONOSUMDB='k8s.io/*' CGO_ENABLED=0 go build -trimpath \
		-tags selinux,notest,grpcnotrace -ldflags "$(kube_ldflags)" -o "$1/" \
		./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/kubectl ./cmd/kubelet)
}

# build_etcd BIN: `go install go.etcd.io/etcd/server/v3@V` refuses etcd's
# replace directives; as a dependency of a throwaway module they are ignored
# and MVS resolves etcd's sibling modules to the same version.
build_etcd() {
	mkdir etcd-build
	(
		cd etcd-build
		local out
		out=$(go mod init probelet.local/etcd-build 2>&1 &&
			GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" 2>&1) || die "go get etcd: $out"
		GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$1/etcd" go.etcd.io/etcd/server/v3
	)
	rm -rf etcd-build
}

main() {
	install_packages "${APT_PACKAGES[@]}"
	go_env
	cache_lock .lock # the same lock as hack/testbed/build.sh: one build at a time
	build_component "$ETCD_DIR" "etcd $ETCD_VERSION" build_etcd
	build_component "$KUBERNETES_SRC_DIR" "kubernetes $KUBERNETES_VERSION source tree" assemble_kubernetes
	build_component "$KUBERNETES_DIR" "kubernetes $KUBERNETES_VERSION" build_kubernetes
	require_built "$ETCD_BIN" "$KUBE_APISERVER_BIN" "$KUBE_CONTROLLER_MANAGER_BIN" "$KUBECTL_BIN" "$KUBELET_BIN"
	printf 'etcd=%s\nkube-apiserver=%s\nkube-controller-manager=%s\nkubectl=%s\nkubelet=%s\n' \
		"$ETCD_BIN" "$KUBE_APISERVER_BIN" "$KUBE_CONTROLLER_MANAGER_BIN" "$KUBECTL_BIN" "$KUBELET_BIN"
}

main "$@"
