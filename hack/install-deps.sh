#!/usr/bin/env bash
# Installs the Debian packages the build, tests and test bed need, once
# (gcc, libc6-dev and libseccomp-dev build the static exec helper,
# hack/build-exec-helper.sh, which installs them itself when missing).
set -euo pipefail

pkgs=(git make gcc libc6-dev iproute2 iptables libseccomp-dev pkg-config busybox-static util-linux procps)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: missing packages ${missing[*]} and not root; install them first" >&2
		exit 1
	fi
	echo "install-deps: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
command -v go >/dev/null || { echo "install-deps: Go is required (go1.26+)" >&2; exit 1; }
