#!/usr/bin/env bash
# build-exec-helper.sh OUT: builds probelet-exec, the static C helper of
# --exec-mode direct (directexec/helper/probelet-exec.c), into OUT, hardened
# (see below). It links libseccomp statically: the library runc compiles
# seccomp profiles with.
# Installs its Debian packages (gcc, libc6-dev, libseccomp-dev) when missing.
set -euo pipefail

out=${1:?usage: build-exec-helper.sh OUT}
repo=$(cd "$(dirname "$0")/.." && pwd)
src=$repo/directexec/helper/probelet-exec.c

pkgs=(gcc libc6-dev libseccomp-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "build-exec-helper: missing packages ${missing[*]} and not root to install them" >&2
		exit 1
	fi
	echo "build-exec-helper: installing ${missing[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$(dirname "$out")"
tmp=$(mktemp "$out.XXXXXX")
trap 'rm -f "$tmp"' EXIT
# Hardened as distributions build setuid-adjacent code: stack protector,
# _FORTIFY_SOURCE=3 (checked libc calls; undefined first, as some
# compilers predefine a lower level), full RELRO with eager binding, and a
# static PIE where gcc, glibc and libseccomp.a allow it (ASLR for the
# helper's own code), else a plain static binary. No debug info and no
# paths go into the binary, so it is the same from any checkout.
# directexec/helper_internal_test.go checks the result with debug/elf.
cflags=(-std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unused-result
	-fstack-protector-strong -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3)
ldflags=(-Wl,-z,relro,-z,now)
if ! ${CC:-gcc} "${cflags[@]}" -fPIE -static-pie "${ldflags[@]}" -o "$tmp" "$src" -lseccomp 2>/dev/null; then
	echo "build-exec-helper: no static-pie with this toolchain; building a static non-PIE binary" >&2
	${CC:-gcc} "${cflags[@]}" -static "${ldflags[@]}" -o "$tmp" "$src" -lseccomp
fi
mv "$tmp" "$out"
trap - EXIT
