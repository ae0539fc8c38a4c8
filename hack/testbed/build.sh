#!/usr/bin/env bash
# build.sh: installs the OS packages the test bed needs and builds containerd,
# runc, crictl and the CNI plugins from the Go module proxy into a versioned
# cache; with PROBELET_TESTBED_RUNTIME=crio also CRI-O (crio, pinns, copyimg)
# and Debian's conmon. Idempotent: finished components are only checked,
# never rebuilt.
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

# CRI-O's build tags: pure-Go OpenPGP (no gpgme), no btrfs headers, the
# ostree transport stubbed, libseccomp on (as its Makefile detects it).
CRIO_TAGS="containers_image_openpgp containers_image_ostree_stub exclude_graphdriver_btrfs seccomp"

# build_crio: CRI-O's module is served at an exact version only (no version
# list, so no `go install pkg@version`): build inside the downloaded module.
# copyimg (CRI-O's own test tool) puts the bed's OCI archives into CRI-O's
# storage; pinns is C, built static as CRI-O's Makefile does.
build_crio() {
	local src
	src=$(go mod download -json "github.com/cri-o/cri-o@$CRIO_VERSION" | jq -r .Dir)
	[ -d "$src" ] || die "cri-o $CRIO_VERSION download gave no directory"
	(cd "$src" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=1 go build -trimpath -tags "$CRIO_TAGS" -o "$1/" ./cmd/crio ./test/copyimg)
	cp -r "$src/pinns" pinns-src
	chmod -R u+w pinns-src
	cc -std=c99 -Os -Wall -static -o "$1/pinns" pinns-src/src/*.c
}

main() {
	local crio=false
	[ "${PROBELET_TESTBED_RUNTIME:-containerd}" = crio ] && crio=true
	$crio && APT_PACKAGES+=(conmon)
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
	if $crio; then
		build_component "$CRIO_DIR" "cri-o $CRIO_VERSION" build_crio
		require_built "$CRIO_BIN" "$PINNS_BIN" "$COPYIMG_BIN" /usr/bin/conmon
		printf 'crio=%s\npinns=%s\ncopyimg=%s\nconmon=%s\n' "$CRIO_BIN" "$PINNS_BIN" "$COPYIMG_BIN" /usr/bin/conmon
	fi
}

main "$@"
