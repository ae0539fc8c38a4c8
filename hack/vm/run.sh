#!/usr/bin/env bash
# run.sh: runs the eBPF packages' kernel tests inside VMs booting a matrix
# of Debian's cloud kernels: Debian 12's Linux 6.1 (the kernel of Amazon
# Linux 2023, Bottlerocket, COS and Debian 12 nodes), the newest 6.12 (the
# LTS of Debian 13 and bookworm-backports), the newest 6.18 (the series
# these machines boot), and the newest kernel the archive serves at all,
# whatever its series. Each runs the same listener cases as on the host,
# each compared with a real dial inside the VM. A kernel that refuses the
# tracker fails the stage: the tests fail rather than dial.
# The 6.1 VM also runs directexec's AppArmor test (the host's kernel has no
# LSM; Debian's enables AppArmor): runc containers under containerd's
# default profile and a Localhost one, each exec through runc and through
# the direct exec helper. `make vm` runs it; `make test` includes it.
#
# QEMU runs under TCG: KVM does not work nested on these machines. The
# kernels come from apt (the .debs are unpacked into the cache, not
# installed), through an apt state of the stage's own under the cache, so
# the host's sources stay as they are: the host's Debian mirror with the
# suites that carry newer kernels (bookworm-backports, trixie,
# trixie-backports). The initramfs is busybox-static, iproute2's ip,
# util-linux's setpriv, `go test -c` binaries (CGO_ENABLED=0, tag vm) of
# the packages below, and for the AppArmor test the test bed's runc, the
# exec helper, Debian's apparmor_parser with /etc/apparmor.d (unpacked, not
# installed) and containerd-apparmor (containerd's own profile loader).
# Kernels older than 6.1 are covered by the static check of the objects
# (ebpf/tracker/kernels_test.go), not here.
#
# Needs root (apt, and the tests create namespaces in the VM). Without it
# the stage is skipped with a message, unless CI is set, where that fails.
#
# Env: GO (default go), VM_KERNELS (space-separated kernel releases to boot
# instead of the matrix, e.g. "6.1.0-47-cloud-amd64"), VM_PARALLEL (VMs
# booted at once, default 2: each is one TCG thread), VM_TIMEOUT (per VM,
# default 420s), VM_TEST_TIMEOUT (per package, default 150s), VM_RUN (a
# -test.run pattern for every package), VM_LOGS (a directory to keep each
# VM's console in), VM_CACHE (default /var/cache/probelet-testbed).
set -euo pipefail

cd "$(dirname "$0")/../.."
GO=${GO:-go}
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
CACHE=${VM_CACHE:-/var/cache/probelet-testbed}
VM_TIMEOUT=${VM_TIMEOUT:-420}
VM_TEST_TIMEOUT=${VM_TEST_TIMEOUT:-150s}
VM_PARALLEL=${VM_PARALLEL:-2}
# The matrix: a series and the kernel of it to boot while apt serves it (or
# it is cached), else the newest of the series apt serves. "newest" is the
# newest cloud kernel of any series: when Debian publishes a kernel whose
# verifier refuses the tracker, this stage turns red before nodes take it.
MATRIX=(
	"6.1 6.1.0-47-cloud-amd64"
	"6.12 6.12.117+deb13-cloud-amd64"
	"6.18 6.18.15+deb13-cloud-amd64"
	"newest -"
)
# The suites of the host's Debian mirror searched for kernels, besides the
# host's own release.
KERNEL_SUITES=(bookworm-backports trixie trixie-backports)
# The packages with kernel tests, in run order; LSM_PACKAGES run on the
# first kernel of the matrix only (the AppArmor test takes a minute of TCG
# and does not depend on the kernel's BPF).
EBPF_PACKAGES=(ebpf/netns ebpf/sockdiag ebpf/tracker ebpf)
LSM_PACKAGES=(directexec/lsmtest)
# Modules the tests need that Debian builds as modules, in load order.
MODULES=(inet_diag tcp_diag veth)
APT_PKGS=(qemu-system-x86 busybox-static cpio iproute2 util-linux xz-utils zstd)
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
	echo "vm: skipped: needs root. Run 'sudo make vm' to test the eBPF programs on the kernel matrix."
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

# The stage's own apt state: the host's mirror (as its sources name it) with
# the kernel suites, lists and downloads under the cache. The host's apt
# configuration and lists are not touched.
APTDIR=$CACHE/vm-apt
APT_OPTS=(-o "Dir::Etc::SourceList=$APTDIR/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$APTDIR/lists" -o "Dir::Cache=$APTDIR/cache" -o APT::Architectures::=amd64)

# apt_setup writes the stage's sources from the host's mirror and refreshes
# its lists when they are missing or a day old.
apt_setup() {
	local codename mirror suite
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' | awk -v r="$codename" '$2 == r {print $1; exit}')
	[ -n "$mirror" ] || fail "no apt source for Debian $codename to take the mirror from"
	mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial"
	{
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $codename main"
		for suite in "${KERNEL_SUITES[@]}"; do
			echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main"
		done
	} >"$APTDIR/sources.list.new"
	if ! cmp -s "$APTDIR/sources.list.new" "$APTDIR/sources.list" ||
		[ -z "$(find "$APTDIR/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -1)" ]; then
		mv "$APTDIR/sources.list.new" "$APTDIR/sources.list"
		log "refreshing the kernel package lists ($codename, ${KERNEL_SUITES[*]})"
		apt-get "${APT_OPTS[@]}" update -qq || fail "apt could not read the kernel suites' package lists"
	fi
	rm -f "$APTDIR/sources.list.new"
}

# served_kernels lists the cloud kernel releases apt serves, oldest first.
served_kernels() {
	apt-cache "${APT_OPTS[@]}" search --names-only '^linux-image-[0-9].*-cloud-amd64(-unsigned)?$' |
		sed -n 's/^linux-image-\([0-9][^ ]*-cloud-amd64\)\(-unsigned\)\{0,1\} .*/\1/p' | sort -uV
}

# pick_kernel prints the kernel of series $1 to boot: $2 while it is cached
# or served, else the newest of the series served ("newest": of any series).
pick_kernel() {
	local series=$1 pinned=$2 served
	served=$(served_kernels)
	if [ "$pinned" != - ] && { [ -f "$CACHE/vm@$pinned/vmlinuz" ] || grep -qxF "$pinned" <<<"$served"; }; then
		echo "$pinned"
	elif [ "$series" = newest ]; then
		tail -1 <<<"$served"
	else
		grep -E "^${series//./\\.}[.-]" <<<"$served" | tail -1
	fi
}

# fetch_kernel unpacks kernel $1's vmlinuz and the modules the tests need
# into $CACHE/vm@$1, once. Debian ships a kernel as one package
# (linux-image-R or -R-unsigned) or, since 7.0, split into linux-binary-R
# and linux-modules-R; modules are .ko, .ko.xz or .ko.zst.
fetch_kernel() {
	local kernel=$1 kdir=$CACHE/vm@$1 tmp p got=() m f
	[ -f "$kdir/vmlinuz" ] && return 0
	tmp=$(mktemp -d)
	log "fetching Linux $kernel from apt into $kdir"
	for p in "linux-image-$kernel-unsigned" "linux-image-$kernel" "linux-binary-$kernel" "linux-modules-$kernel"; do
		# A name other packages mention can be known without being served.
		[[ "$(apt-cache "${APT_OPTS[@]}" policy "$p" 2>/dev/null)" == *"Candidate: "[0-9]* ]] || continue
		(cd "$tmp" && apt-get "${APT_OPTS[@]}" download -qq "$p" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
		got+=("$p")
		# The unsigned image has everything the signed one has.
		[ "$p" != "linux-image-$kernel-unsigned" ] || break
	done
	ls "$tmp"/*.deb >/dev/null 2>&1 || fail "apt could not download Linux $kernel (tried ${got[*]:-no package: none is served})"
	for p in "$tmp"/*.deb; do
		dpkg-deb -x "$p" "$tmp/x"
	done
	mkdir -p "$kdir.tmp/modules"
	f=$(find "$tmp/x" \( -path "*/boot/vmlinuz-$kernel" -o -path "*/modules/$kernel/vmlinuz" \) | head -1)
	[ -n "$f" ] || fail "Linux $kernel: no vmlinuz in ${got[*]}"
	cp "$f" "$kdir.tmp/vmlinuz"
	for m in "${MODULES[@]}"; do
		f=$(find "$tmp/x" -path "*/modules/$kernel/kernel/*" \( -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" \) | head -1)
		if [ -z "$f" ]; then
			grep -q "/$m.ko$" "$(find "$tmp/x" -path "*/modules/$kernel/modules.builtin" | head -1)" 2>/dev/null ||
				fail "Linux $kernel: module $m is neither in ${got[*]} nor built in"
			continue
		fi
		case "$f" in
		*.xz) xz -dc "$f" >"$kdir.tmp/modules/$m.ko" ;;
		*.zst) zstd -qdc "$f" >"$kdir.tmp/modules/$m.ko" ;;
		*) cp "$f" "$kdir.tmp/modules/$m.ko" ;;
		esac
	done
	rm -rf "$tmp" "$kdir"
	mv "$kdir.tmp" "$kdir"
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
# the initramfs tree $1.
copy_binary() {
	local root=$1 bin=$2 dest=$3 lib
	install -D -m 0755 "$bin" "$root$dest"
	for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
		[ -e "$root$lib" ] || install -D -m 0755 "$lib" "$root$lib"
	done
}

# build_tests compiles each package's tests once, with the files they read
# (the bpf2go objects, testdata), into $WORK/tests/<pkg>.
build_tests() {
	local pkg dir
	for pkg in "${EBPF_PACKAGES[@]}" "${LSM_PACKAGES[@]}"; do
		dir=$WORK/tests/${pkg//\//_}
		mkdir -p "$dir"
		log "go test -c ./$pkg"
		CGO_ENABLED=0 "$GO" test -tags vm -c -o "$dir/pkg.test" "./$pkg"
		find "$pkg" -maxdepth 1 -name '*.o' -exec cp {} "$dir/" \;
		[ ! -d "$pkg/testdata" ] || cp -a "$pkg/testdata" "$dir/"
	done
}

# build_base packs what every VM has: busybox, ip, setpriv, init.sh; and
# into $WORK/lsm-root what the AppArmor test adds.
build_base() {
	local root=$WORK/base
	mkdir -p "$root"/{bin,dev,proc,sys,tmp,run,tests,lib/modules}
	install -m 0755 /bin/busybox "$root/bin/busybox"
	install -m 0755 hack/vm/init.sh "$root/init"
	copy_binary "$root" "$(command -v ip)" /usr/bin/ip
	copy_binary "$root" "$(command -v setpriv)" /usr/bin/setpriv
	root=$WORK/lsm-root
	mkdir -p "$root/etc/apparmor.d"
	copy_binary "$root" "$RUNC_BIN" /usr/bin/runc
	copy_binary "$root" "$AADIR/sbin/apparmor_parser" /usr/sbin/apparmor_parser
	cp -a "$AADIR/etc/apparmor.d/abi" "$AADIR/etc/apparmor.d/tunables" "$AADIR/etc/apparmor.d/abstractions" "$root/etc/apparmor.d/"
	hack/build-exec-helper.sh "$root/usr/bin/probelet-exec"
	log "go build hack/vm/containerd-apparmor"
	(cd hack/vm/containerd-apparmor && CGO_ENABLED=0 GOWORK=off "$GO" build -o "$root/usr/bin/containerd-apparmor" .)
}

# build_initramfs packs kernel $1's initramfs into $2/initrd: the base, its
# modules, and the tests of the packages that follow.
build_initramfs() {
	local kernel=$1 out=$2 root=$2/root m pkg
	shift 2
	cp -a "$WORK/base" "$root"
	for m in "${MODULES[@]}"; do
		[ -f "$CACHE/vm@$kernel/modules/$m.ko" ] || continue
		cp "$CACHE/vm@$kernel/modules/$m.ko" "$root/lib/modules/"
		echo "$m.ko" >>"$root/lib/modules/order"
	done
	touch "$root/lib/modules/order"
	for pkg in "$@"; do
		[ "$pkg" != "${LSM_PACKAGES[0]}" ] || cp -a "$WORK/lsm-root/." "$root/"
		cp -a "$WORK/tests/${pkg//\//_}" "$root/tests/"
		echo "${pkg//\//_}" >>"$root/tests/order"
	done
	echo "$VM_TEST_TIMEOUT" >"$root/tests/timeout"
	[ -z "${VM_RUN:-}" ] || echo "$VM_RUN" >"$root/tests/run"
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out/initrd"
	rm -rf "$root"
}

# boot runs kernel $1 with $2/initrd, the console into $2/console.log.
boot() {
	local kernel=$1 out=$2
	local args=(-machine accel=tcg -cpu max -m 1536 -smp 1 -nographic -no-reboot
		-kernel "$CACHE/vm@$kernel/vmlinuz" -initrd "$out/initrd"
		-append "console=ttyS0 rdinit=/init panic=-1 quiet")
	timeout --foreground "$VM_TIMEOUT" qemu-system-x86_64 "${args[@]}" </dev/null 2>&1 | tr -d '\r' >"$out/console.log" || true
}

# verdict reads kernel $1's console in $2: every package that follows must
# report PASS, and the run must reach its end. It prints one line and
# returns non-zero on a failure.
verdict() {
	local kernel=$1 out=$2 console=$2/console.log pkg line failed=()
	shift 2
	if ! grep -q "^PROBELET-VM KERNEL $kernel" "$console"; then
		echo "FAIL Linux $kernel: the VM did not boot it"
		return 1
	fi
	for pkg in "$@"; do
		line=$(grep "^PROBELET-VM RESULT ${pkg//\//_} " "$console" || true)
		case "$line" in
		*" PASS "*) ;;
		'') failed+=("$pkg: no result (timed out or crashed)") ;;
		*) failed+=("$pkg: FAIL") ;;
		esac
	done
	grep -q '^PROBELET-VM DONE' "$console" || failed+=("the run did not finish within ${VM_TIMEOUT}s")
	if [ ${#failed[@]} -gt 0 ]; then
		echo "FAIL Linux $kernel: $(printf '%s; ' "${failed[@]}")"
		return 1
	fi
	echo "PASS Linux $kernel: $(grep -c -- '^--- PASS' "$console") top-level tests; tracker features $(features "$console"); $(grep '^PROBELET-VM RESULT' "$console" | awk '{printf "%s%s %s %s", sep, $3, $4, $5; sep=", "}')"
}

# features reads the optional kernel capabilities the tracker's tests found.
features() {
	sed -n 's/.*this kernel offers: \([a-z_,]*\).*/\1/p' "$1" | head -1
}

# run_kernel boots kernel $1 with the packages that follow and writes its
# verdict to $WORK/vm@$1/verdict.
run_kernel() {
	local kernel=$1 out=$WORK/vm@$1 start
	shift
	mkdir -p "$out"
	start=$(date +%s)
	build_initramfs "$kernel" "$out" "$@"
	boot "$kernel" "$out"
	{ verdict "$kernel" "$out" "$@" || true; } | sed "s/\$/ ($(($(date +%s) - start))s)/" >"$out/verdict"
}

install_missing
# The test bed's runc (cached; built when missing).
# shellcheck source=hack/testbed/lib.sh
RUNC_BIN=$(. hack/testbed/lib.sh && echo "$RUNC_BIN")
[ -x "$RUNC_BIN" ] || hack/testbed/build.sh >/dev/null || fail "hack/testbed/build.sh failed"
AADIR=$CACHE/vm-apparmor
fetch_apparmor
apt_setup
KERNELS=()
if [ -n "${VM_KERNELS:-}" ]; then
	read -ra KERNELS <<<"$VM_KERNELS"
else
	for entry in "${MATRIX[@]}"; do
		read -r series pinned <<<"$entry"
		k=$(pick_kernel "$series" "$pinned")
		[ -n "$k" ] || fail "apt serves no cloud kernel of Linux $series"
		printf '%s\n' "${KERNELS[@]}" | grep -qxF "$k" || KERNELS+=("$k")
	done
fi
for k in "${KERNELS[@]}"; do
	fetch_kernel "$k"
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)
build_tests
build_base
log "booting ${KERNELS[*]} under QEMU (TCG), $VM_PARALLEL at a time, at most ${VM_TIMEOUT}s each"
for i in "${!KERNELS[@]}"; do
	if [ "$i" -eq 0 ]; then
		run_kernel "${KERNELS[$i]}" "${EBPF_PACKAGES[@]}" "${LSM_PACKAGES[@]}" &
	else
		run_kernel "${KERNELS[$i]}" "${EBPF_PACKAGES[@]}" &
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$VM_PARALLEL" ]; do
		wait -n || true
	done
done
wait
if [ -n "${VM_LOGS:-}" ]; then
	mkdir -p "$VM_LOGS"
	for k in "${KERNELS[@]}"; do
		cp "$WORK/vm@$k/console.log" "$VM_LOGS/console-$k.log" 2>/dev/null || true
	done
fi
failed=0
for k in "${KERNELS[@]}"; do
	v=$(cat "$WORK/vm@$k/verdict" 2>/dev/null || echo "FAIL Linux $k: no verdict")
	case "$v" in
	PASS*) ;;
	*)
		failed=1
		echo "vm: ---- console of Linux $k ----" >&2
		cat "$WORK/vm@$k/console.log" >&2 || true
		;;
	esac
done
echo "vm: kernel matrix ($(($(date +%s) - start))s):"
for k in "${KERNELS[@]}"; do
	echo "vm:   $(cat "$WORK/vm@$k/verdict" 2>/dev/null || echo "FAIL Linux $k: no verdict")"
done
[ "$failed" -eq 0 ] || fail "a kernel of the matrix failed the eBPF or AppArmor tests (its console is above)"
echo "vm: PASS: the eBPF kernel tests pass on ${KERNELS[*]}; the AppArmor test on ${KERNELS[0]}"
