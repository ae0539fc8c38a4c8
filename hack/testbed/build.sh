#!/usr/bin/env bash
# build.sh: installs the OS packages the test bed needs and builds containerd,
# runc, crictl and the CNI plugins from the Go module proxy into a versioned
# cache. Idempotent: finished components are only checked, never rebuilt.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

APT_PACKAGES=(libseccomp-dev pkg-config gcc libc6-dev iproute2 busybox-static util-linux mount jq)

build_containerd() {
	GOBIN=$1 go install \
		"github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
		"github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION" \
		"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"
}

build_runc() {
	CGO_ENABLED=1 GOBIN=$1 go install -tags "seccomp urfave_cli_no_docs" \
		"github.com/opencontainers/runc@$RUNC_VERSION"
}

# crictl's module is not served by the checksum database here, so download it
# unchecked and build inside the downloaded module.
build_crictl() {
	local src
	src=$(GONOSUMDB=sigs.k8s.io/cri-tools go mod download -json "sigs.k8s.io/cri-tools@$CRICTL_VERSION" | jq -r .Dir)
	[ -d "$src" ] || die "cri-tools $CRICTL_VERSION download gave no directory"
	(cd "$src" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 go build -trimpath -o "$1/crictl" \
		-ldflags "-X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION" ./cmd/crictl)
}

build_cni() {
	local p pkgs=()
	for p in main/bridge main/loopback ipam/host-local meta/portmap; do
		pkgs+=("github.com/containernetworking/plugins/plugins/$p@$CNI_VERSION")
	done
	CGO_ENABLED=0 GOBIN=$1 go install "${pkgs[@]}"
}

main() {
	install_packages "${APT_PACKAGES[@]}"
	go_env
	cache_lock .lock # concurrent beds and clusters wait for one build instead of racing it
	build_component "$CONTAINERD_DIR" "containerd $CONTAINERD_VERSION" build_containerd
	build_component "$RUNC_DIR" "runc $RUNC_VERSION" build_runc
	build_component "$CRICTL_DIR" "crictl $CRICTL_VERSION" build_crictl
	build_component "$CNI_DIR" "cni plugins $CNI_VERSION" build_cni
	require_built "$CONTAINERD_BIN" "$CTR_BIN" "$CONTAINERD_DIR/bin/containerd-shim-runc-v2" "$RUNC_BIN" "$CRICTL_BIN" \
		"$CNI_BIN_DIR/bridge" "$CNI_BIN_DIR/loopback" "$CNI_BIN_DIR/host-local" "$CNI_BIN_DIR/portmap"
	printf 'containerd=%s\nctr=%s\nrunc=%s\ncrictl=%s\ncnibin=%s\n' \
		"$CONTAINERD_BIN" "$CTR_BIN" "$RUNC_BIN" "$CRICTL_BIN" "$CNI_BIN_DIR"
}

main "$@"
