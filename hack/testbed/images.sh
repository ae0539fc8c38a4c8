#!/usr/bin/env bash
# images.sh: builds the test bed's pause and busybox images as single-layer
# OCI archives (no registry needed) into the cache and prints their paths.
# Idempotent: a cached build is reused until one of its sources changes.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# gobuild OUT FILES...: builds stdlib-only sources outside any module, so the
# repository's go.mod (and other work in progress on it) is never involved.
gobuild() {
	local out=$1
	shift
	(cd "$WORK" && GO111MODULE=on CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out" "$@")
}

pause_rootfs() {
	mkdir -p "$1"
	gobuild "$1/pause" "$TESTBED_HACK"/pause/main.go
}

busybox_rootfs() {
	local root=$1 applet
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,root,tmp,proc,sys,dev,var/www}
	chmod 1777 "$root/tmp"
	install -m 0755 /bin/busybox "$root/bin/busybox"
	for applet in $(/bin/busybox --list-full); do
		[ "$applet" = bin/busybox ] || [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	printf 'probelet test bed\n' >"$root/var/www/index.html"
	gobuild "$root/bin/grpc-health" "$TESTBED_HACK"/grpchealth/*.go
}

main() {
	go_env
	[ -x /bin/busybox ] || die "/bin/busybox missing: run build.sh (it installs busybox-static)"
	# The image has no libc: a dynamic busybox would not start in it.
	! ldd /bin/busybox >/dev/null 2>&1 || die "/bin/busybox is dynamically linked; install busybox-static"
	local dir
	dir=$(images_dir)
	cache_lock .images.lock
	if [ ! -f "$dir/.complete" ]; then
		WORK=$(mktemp -d "$TESTBED_CACHE/.images.XXXXXX")
		trap 'rm -rf "$WORK"' EXIT
		mkdir -p "$WORK/out"
		local srcs
		mapfile -t srcs < <(mkimage_sources)
		gobuild "$WORK/mkimage" "${srcs[@]}"
		pause_rootfs "$WORK/pause"
		busybox_rootfs "$WORK/busybox"
		"$WORK/mkimage" -rootfs "$WORK/pause" -name "$PAUSE_IMAGE" -entrypoint /pause -out "$WORK/out/pause.tar"
		"$WORK/mkimage" -rootfs "$WORK/busybox" -name "$BUSYBOX_IMAGE" -cmd sh \
			-env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -out "$WORK/out/busybox.tar"
		touch "$WORK/out/.complete"
		rm -rf "$dir"
		mv "$WORK/out" "$dir"
		log "built images in $dir"
	fi
	printf 'pause=%s\nbusybox=%s\n' "$dir/pause.tar" "$dir/busybox.tar"
}

main "$@"
