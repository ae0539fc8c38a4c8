#!/usr/bin/env bash
# build.sh: builds probelet's OCI image without a container engine: the
# static binaries (probelet, probectl, kubectl-probelet, probelet-nri-install, probelet-controller) for every
# platform, plus hack/image/rootfs (/etc/passwd, /etc/group), packed by
# hack/testbed/mkimage into one multi-platform image (an image index) as an
# OCI layout tarball that `ctr images import`, skopeo and crane accept.
#
# Reproducible: the same sources, Go toolchain and VERSION give the same
# bytes and digest. Binaries: -trimpath, -buildvcs=false, -buildid=, no
# cgo. Layers: entries sorted, owned by 0:0, mtime 0, modes set here (not
# taken from the checkout's umask), gzip without name or time.
#
# usage: build.sh [--out FILE] [--name REF] [--version V]
#                 [--platforms amd64,arm64] [--bin-dir DIR]
#   --bin-dir DIR  take DIR/<arch>/<binary> instead of compiling (tests)
# Prints image=FILE, digest=sha256:..., name=REF.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../testbed/lib.sh
. "$(dirname "$0")/../testbed/lib.sh"

log() { printf 'image: %s\n' "$*" >&2; }

IMAGE_HACK=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$IMAGE_HACK/../.." && pwd)

# BINARIES are the image's programs: installed name, and its package under
# cmd/ (PACKAGES, where it is not the name).
BINARIES=(probelet probectl kubectl-probelet probelet-nri-install probelet-controller)
declare -A PACKAGES=([kubectl-probelet]=probectl/kubectl-probelet)
# ENTRYPOINT and ENV_PATH match deploy/Dockerfile (deploy/image_test.go).
ENTRYPOINT=/usr/local/bin/probelet
ENV_PATH=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
STAMP=github.com/probelet/probelet/internal/version.Version

usage() { die "usage: build.sh [--out FILE] [--name REF] [--version V] [--platforms amd64,arm64] [--bin-dir DIR]"; }

# compile ARCH DIR: the binaries for linux/ARCH into DIR.
compile() {
	local arch=$1 dir=$2 pkgs=() b
	for b in "${BINARIES[@]}"; do pkgs+=("./cmd/${PACKAGES[$b]:-$b}"); done
	(cd "$REPO" && CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -buildvcs=false -tags grpcnotrace \
		-ldflags "-s -w -buildid= -X $STAMP=$VERSION" -o "$dir/" "${pkgs[@]}")
}

# stage ARCH ROOT: the root filesystem of linux/ARCH, with fixed modes.
stage() {
	local arch=$1 root=$2 b
	install -d -m 0755 "$root/etc" "$root/usr" "$root/usr/local" "$root/usr/local/bin"
	install -m 0644 "$IMAGE_HACK"/rootfs/etc/* "$root/etc/"
	if [ -n "$BIN_DIR" ]; then
		for b in "${BINARIES[@]}"; do
			[ -f "$BIN_DIR/$arch/$b" ] || die "$BIN_DIR/$arch/$b missing"
			install -m 0755 "$BIN_DIR/$arch/$b" "$root/usr/local/bin/$b"
		done
	else
		log "compiling linux/$arch"
		compile "$arch" "$WORK/bin-$arch"
		for b in "${BINARIES[@]}"; do install -m 0755 "$WORK/bin-$arch/$b" "$root/usr/local/bin/$b"; done
	fi
	# The checkout's umask must not leak into the directories' modes.
	chmod 0755 "$root"
}

main() {
	OUT=$REPO/bin/image/probelet.oci.tar
	VERSION=${VERSION:-dev}
	NAME=
	PLATFORMS=amd64,arm64
	BIN_DIR=
	while [ $# -gt 0 ]; do
		case $1 in
		--out) OUT=$2 ;;
		--name) NAME=$2 ;;
		--version) VERSION=$2 ;;
		--platforms) PLATFORMS=$2 ;;
		--bin-dir) BIN_DIR=$(realpath "$2") ;;
		*) usage ;;
		esac
		[ $# -ge 2 ] || usage
		shift 2
	done
	NAME=${NAME:-localhost/probelet/probelet:$VERSION}
	go_env
	mkdir -p "$(dirname "$OUT")"
	OUT=$(realpath "$OUT")
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/probelet-image.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT
	local srcs args=() arch
	mapfile -t srcs < <(mkimage_sources)
	(cd "$WORK" && GO111MODULE=on CGO_ENABLED=0 go build -trimpath -o "$WORK/mkimage" "${srcs[@]}")
	for arch in ${PLATFORMS//,/ }; do
		stage "$arch" "$WORK/rootfs-$arch"
		args+=(-platform "$arch=$WORK/rootfs-$arch")
	done
	"$WORK/mkimage" "${args[@]}" -gzip -name "$NAME" -entrypoint "$ENTRYPOINT" -env "$ENV_PATH" \
		-out "$OUT" -digest-file "$WORK/digest"
	printf 'image=%s\ndigest=%s\nname=%s\n' "$OUT" "$(cat "$WORK/digest")" "$NAME"
}

main "$@"
