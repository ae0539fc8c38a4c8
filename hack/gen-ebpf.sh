#!/usr/bin/env bash
# gen-ebpf.sh: regenerates the committed bpf2go output of ebpf/tracker
# (tracker_{x86,arm64}_bpfel.{go,o}) from ebpf/tracker/bpf/tracker.c with
# Debian's clang and libbpf headers, installing them when missing. The output
# is byte-for-byte reproducible with the same toolchain; check with
#   hack/gen-ebpf.sh && git diff --exit-code -- ebpf/
#
# gen-ebpf.sh --vmlinux FILE writes the running kernel's full vmlinux.h to
# FILE, for reference when tracker.c needs a type the trimmed
# ebpf/tracker/bpf/vmlinux.h does not have yet.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

# The Debian 12 toolchain the committed objects were built with.
WANT_CLANG_MAJOR=14
PKGS=(clang llvm libbpf-dev bpftool)

install_missing() {
	local missing=() p
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "gen-ebpf: missing ${missing[*]} and not root; install them first" >&2
		exit 1
	fi
	echo "gen-ebpf: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

install_missing

if [ "${1:-}" = "--vmlinux" ]; then
	bpftool btf dump file /sys/kernel/btf/vmlinux format c >"${2:?usage: gen-ebpf.sh --vmlinux FILE}"
	exit 0
fi

major=$(clang -dumpversion | cut -d. -f1)
if [ "$major" != "$WANT_CLANG_MAJOR" ]; then
	echo "gen-ebpf: warning: clang $major, the committed objects come from clang $WANT_CLANG_MAJOR; expect a diff" >&2
fi
go generate ./ebpf/tracker
echo "gen-ebpf: regenerated ebpf/tracker"
