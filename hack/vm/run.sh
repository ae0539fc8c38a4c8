#!/usr/bin/env bash
# run.sh: runs the eBPF packages' kernel tests inside a VM booting Debian
# 12's Linux 6.1 cloud kernel (the kernel of Amazon Linux 2023, Bottlerocket,
# COS and Debian 12 nodes), the same listener cases as on the host, each
# compared with a real dial inside the VM; and directexec's AppArmor test
# (the host's kernel has no LSM; Debian's enables AppArmor): runc
# containers under containerd's default profile and a Localhost one, each
# exec through runc and through the direct exec helper. `make vm` runs it;
# `make test` includes it.
#
# QEMU runs under TCG: KVM does not work nested on these machines. The
# kernel comes from apt (the .deb is unpacked into the cache, not
# installed), the initramfs is busybox-static, iproute2's ip, util-linux's
# setpriv, `go test -c` binaries (CGO_ENABLED=0, tag vm) of the packages
# below, and for the AppArmor test the test bed's runc, the exec helper,
# Debian's apparmor_parser with /etc/apparmor.d (unpacked, not installed)
# and containerd-apparmor (containerd's own profile loader).
# Kernels older than the VM's are covered by the static check of the
# objects (ebpf/tracker/kernels_test.go), not here.
#
# Needs root (apt, and the tests create namespaces in the VM). Without it
# the stage is skipped with a message, unless CI is set, where that fails.
#
# Env: GO (default go), VM_KERNEL (default 6.1.0-47-cloud-amd64; the newest
# 6.1 cloud kernel apt serves when that one is gone), VM_TIMEOUT (whole VM,
# default 420s), VM_TEST_TIMEOUT (per package, default 150s), VM_RUN (a
# -test.run pattern for every package), VM_CACHE (default
# /var/cache/probelet-testbed).
set -euo pipefail

cd "$(dirname "$0")/../.."
GO=${GO:-go}
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
PINNED_KERNEL=6.1.0-47-cloud-amd64
CACHE=${VM_CACHE:-/var/cache/probelet-testbed}
VM_TIMEOUT=${VM_TIMEOUT:-420}
VM_TEST_TIMEOUT=${VM_TEST_TIMEOUT:-150s}
# The packages with kernel tests, in run order.
PACKAGES=(ebpf/netns ebpf/sockdiag ebpf/tracker ebpf directexec/lsmtest)
# Modules the tests need that Debian builds as modules, in load order.
MODULES=(net/ipv4/inet_diag.ko net/ipv4/tcp_diag.ko drivers/net/veth.ko)
APT_PKGS=(qemu-system-x86 busybox-static cpio iproute2 util-linux)
# Debian's AppArmor userspace, unpacked into the cache for the VM.
APPARMOR_DEB=apparmor

log() { echo "vm: $*" >&2; }
fail() {
	echo "vm: FAIL: $*" >&2
	exit 1
}

# shellcheck source=hack/lib/ci.sh
. "$(dirname "$0")/../lib/ci.sh"

if [ "$(id -u)" -ne 0 ]; then
	ci_set && fail "the VM stage needs root (apt, network namespaces in the VM); CI=$CI requires it to run"
	echo "vm: skipped: needs root. Run 'sudo make vm' to test the eBPF programs on Linux 6.1."
	exit 0
fi
[ "$(uname -m)" = x86_64 ] || fail "the test VM is x86_64 only (uname -m: $(uname -m))"

install_missing() {
	local missing=() p
	for p in "${APT_PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# pick_kernel prints the kernel to boot: VM_KERNEL, else the pinned one
# while apt serves it, else the newest 6.1 cloud kernel apt serves.
pick_kernel() {
	if [ -n "${VM_KERNEL:-}" ]; then
		echo "$VM_KERNEL"
	elif [ -d "$CACHE/vm@$PINNED_KERNEL" ] || apt-cache show "linux-image-$PINNED_KERNEL-unsigned" >/dev/null 2>&1; then
		echo "$PINNED_KERNEL"
	else
		apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' |
			sed 's/^linux-image-\(6\.1\.0-[0-9]*-cloud-amd64\)-unsigned.*/\1/' | sort -V | tail -1
	fi
}

# fetch_kernel unpacks the kernel package's vmlinuz and the modules the
# tests need into $KDIR, once.
fetch_kernel() {
	[ -f "$KDIR/vmlinuz" ] && return 0
	local tmp
	tmp=$(mktemp -d)
	log "fetching linux-image-$KERNEL-unsigned from apt into $KDIR"
	(cd "$tmp" && apt-get download -qq "linux-image-$KERNEL-unsigned" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
	ls "$tmp"/*.deb >/dev/null 2>&1 || fail "apt could not download linux-image-$KERNEL-unsigned"
	dpkg-deb -x "$tmp"/*.deb "$tmp/x"
	mkdir -p "$KDIR.tmp/modules"
	cp "$tmp/x/boot/vmlinuz-$KERNEL" "$KDIR.tmp/vmlinuz"
	local m
	for m in "${MODULES[@]}"; do
		cp "$tmp/x/lib/modules/$KERNEL/kernel/$m" "$KDIR.tmp/modules/" || fail "module $m missing from the package"
	done
	rm -rf "$tmp" "$KDIR"
	mv "$KDIR.tmp" "$KDIR"
}

# fetch_apparmor unpacks Debian's apparmor package (apparmor_parser and
# /etc/apparmor.d) into $AADIR, once.
fetch_apparmor() {
	[ -x "$AADIR/sbin/apparmor_parser" ] && return 0
	local tmp
	tmp=$(mktemp -d)
	log "fetching $APPARMOR_DEB from apt into $AADIR"
	(cd "$tmp" && apt-get download -qq "$APPARMOR_DEB" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
	if ! ls "$tmp"/*.deb >/dev/null 2>&1; then
		# A fresh machine may have no package lists yet.
		apt-get update -qq
		(cd "$tmp" && apt-get download -qq "$APPARMOR_DEB" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
	fi
	ls "$tmp"/*.deb >/dev/null 2>&1 || fail "apt could not download $APPARMOR_DEB"
	dpkg-deb -x "$tmp"/*.deb "$tmp/x"
	rm -rf "$AADIR"
	mkdir -p "$(dirname "$AADIR")"
	mv "$tmp/x" "$AADIR"
	rm -rf "$tmp"
}

# copy_binary puts a host binary and the shared libraries it loads into
# the initramfs tree $ROOT.
copy_binary() {
	local bin=$1 dest=$2 lib
	install -D -m 0755 "$bin" "$ROOT$dest"
	for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
		[ -e "$ROOT$lib" ] || install -D -m 0755 "$lib" "$ROOT$lib"
	done
}

# build_initramfs compiles the packages' tests and packs them with busybox,
# ip, setpriv, the modules and init.sh into $WORK/initrd.
build_initramfs() {
	ROOT=$WORK/root
	mkdir -p "$ROOT"/{bin,dev,proc,sys,tmp,run,tests,lib/modules}
	install -m 0755 /bin/busybox "$ROOT/bin/busybox"
	install -m 0755 hack/vm/init.sh "$ROOT/init"
	copy_binary "$(command -v ip)" /usr/bin/ip
	copy_binary "$(command -v setpriv)" /usr/bin/setpriv
	local m pkg dir
	for m in "${MODULES[@]}"; do
		cp "$KDIR/modules/$(basename "$m")" "$ROOT/lib/modules/"
		basename "$m" >>"$ROOT/lib/modules/order"
	done
	# The AppArmor test's parts.
	copy_binary "$RUNC_BIN" /usr/bin/runc
	copy_binary "$AADIR/sbin/apparmor_parser" /usr/sbin/apparmor_parser
	mkdir -p "$ROOT/etc/apparmor.d"
	cp -a "$AADIR/etc/apparmor.d/abi" "$AADIR/etc/apparmor.d/tunables" "$AADIR/etc/apparmor.d/abstractions" "$ROOT/etc/apparmor.d/"
	hack/build-exec-helper.sh "$ROOT/usr/bin/probelet-exec"
	log "go build hack/vm/containerd-apparmor"
	(cd hack/vm/containerd-apparmor && CGO_ENABLED=0 GOWORK=off "$GO" build -o "$ROOT/usr/bin/containerd-apparmor" .)
	for pkg in "${PACKAGES[@]}"; do
		dir=$ROOT/tests/${pkg//\//_}
		mkdir -p "$dir"
		log "go test -c ./$pkg"
		CGO_ENABLED=0 "$GO" test -tags vm -c -o "$dir/pkg.test" "./$pkg"
		# Tests read their package's committed files (the bpf2go objects,
		# testdata).
		find "$pkg" -maxdepth 1 -name '*.o' -exec cp {} "$dir/" \;
		[ ! -d "$pkg/testdata" ] || cp -a "$pkg/testdata" "$dir/"
		echo "${pkg//\//_}" >>"$ROOT/tests/order"
	done
	echo "$VM_TEST_TIMEOUT" >"$ROOT/tests/timeout"
	[ -z "${VM_RUN:-}" ] || echo "$VM_RUN" >"$ROOT/tests/run"
	(cd "$ROOT" && find . | cpio -o -H newc --quiet | gzip -1) >"$WORK/initrd"
	log "initramfs: $(du -h "$WORK/initrd" | cut -f1)"
}

boot() {
	log "booting Linux $KERNEL under QEMU (TCG), at most ${VM_TIMEOUT}s"
	local args=(-machine accel=tcg -cpu max -m 1536 -smp 1 -nographic -no-reboot
		-kernel "$KDIR/vmlinuz" -initrd "$WORK/initrd"
		-append "console=ttyS0 rdinit=/init panic=-1 quiet")
	timeout --foreground "$VM_TIMEOUT" qemu-system-x86_64 "${args[@]}" </dev/null | tr -d '\r' | tee "$WORK/console.log" || true
}

# verdict reads the console: every package must report PASS, and the run
# must reach its end.
verdict() {
	local console=$WORK/console.log pkg line failed=()
	grep -q "^PROBELET-VM KERNEL $KERNEL" "$console" || fail "the VM did not boot Linux $KERNEL (see the console above)"
	for pkg in "${PACKAGES[@]}"; do
		line=$(grep "^PROBELET-VM RESULT ${pkg//\//_} " "$console" || true)
		case "$line" in
		*" PASS "*) ;;
		'') failed+=("$pkg: no result (timed out or crashed)") ;;
		*) failed+=("$pkg: FAIL") ;;
		esac
	done
	grep -q '^PROBELET-VM DONE' "$console" || failed+=("the run did not finish within ${VM_TIMEOUT}s")
	[ ${#failed[@]} -eq 0 ] || fail "on Linux $KERNEL: $(printf '%s; ' "${failed[@]}")"
	echo "vm: PASS: the eBPF and AppArmor kernel tests pass on Linux $KERNEL ($(grep -c -- '^--- PASS' "$console") top-level tests):"
	grep '^PROBELET-VM RESULT' "$console" | sed 's/^PROBELET-VM RESULT /vm:   /'
}

install_missing
# The test bed's runc (cached; built when missing).
# shellcheck source=hack/testbed/lib.sh
RUNC_BIN=$(. hack/testbed/lib.sh && echo "$RUNC_BIN")
[ -x "$RUNC_BIN" ] || hack/testbed/build.sh >/dev/null || fail "hack/testbed/build.sh failed"
AADIR=$CACHE/vm-apparmor
fetch_apparmor
KERNEL=$(pick_kernel)
[ -n "$KERNEL" ] || fail "apt serves no linux-image-6.1.0-*-cloud-amd64-unsigned"
KDIR=$CACHE/vm@$KERNEL
fetch_kernel
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)
build_initramfs
boot
verdict
log "VM stage took $(($(date +%s) - start))s"
