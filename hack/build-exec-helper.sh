#!/usr/bin/env bash
# build-exec-helper.sh OUT: builds probelet-exec, the static C helper of
# --exec-mode direct (directexec/helper/probelet-exec.c), into OUT. It links
# libseccomp statically: the library runc compiles seccomp profiles with.
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
${CC:-gcc} -std=gnu11 -O2 -static -Wall -Wextra -Werror -Wno-unused-result \
	-o "$tmp" "$src" -lseccomp
mv "$tmp" "$out"
trap - EXIT
