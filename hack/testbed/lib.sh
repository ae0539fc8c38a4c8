# shellcheck shell=bash disable=SC2034 # variables are for the scripts that source this
# shellcheck source-path=SCRIPTDIR
# lib.sh: versions, paths and helpers of the test bed scripts, on top of the
# harness's shared half in hack/lib (also hack/cluster's, through this file).
# Sourced, never run. Callers set -euo pipefail themselves.

TESTBED_HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TESTBED_REPO=$(cd "$TESTBED_HACK/../.." && pwd)
LOG_PREFIX=testbed

# shellcheck source=../lib/log.sh
. "$TESTBED_HACK/../lib/log.sh"
# shellcheck source=../lib/cache.sh
. "$TESTBED_HACK/../lib/cache.sh"
# shellcheck source=../lib/build.sh
. "$TESTBED_HACK/../lib/build.sh"
# shellcheck source=../lib/proc.sh
. "$TESTBED_HACK/../lib/proc.sh"
# shellcheck source=../lib/dirs.sh
. "$TESTBED_HACK/../lib/dirs.sh"
# shellcheck source=../lib/gc.sh
. "$TESTBED_HACK/../lib/gc.sh"

CONTAINERD_VERSION=v2.4.2
RUNC_VERSION=v1.5.2
CRICTL_VERSION=v1.34.0
CNI_VERSION=v1.9.1
# CRI-O, the second runtime (PROBELET_TESTBED_RUNTIME=crio). The module proxy
# serves this exact version (no version list, no later 1.34 patch).
CRIO_VERSION=v1.34.0

PAUSE_IMAGE=localhost/probelet/pause:testbed
BUSYBOX_IMAGE=localhost/probelet/busybox:testbed

# BED_MARKER marks a directory as a test bed; down.sh deletes only those.
BED_MARKER=.probelet-testbed

# One directory per component@version; a .complete stamp marks a finished build.
CONTAINERD_DIR=$TESTBED_CACHE/containerd@$CONTAINERD_VERSION
RUNC_DIR=$TESTBED_CACHE/runc@$RUNC_VERSION
CRICTL_DIR=$TESTBED_CACHE/crictl@$CRICTL_VERSION
CNI_DIR=$TESTBED_CACHE/cni-plugins@$CNI_VERSION
CRIO_DIR=$TESTBED_CACHE/crio@$CRIO_VERSION

CONTAINERD_BIN=$CONTAINERD_DIR/bin/containerd
CTR_BIN=$CONTAINERD_DIR/bin/ctr
RUNC_BIN=$RUNC_DIR/bin/runc
CRICTL_BIN=$CRICTL_DIR/bin/crictl
CNI_BIN_DIR=$CNI_DIR/bin
CRIO_BIN=$CRIO_DIR/bin/crio
PINNS_BIN=$CRIO_DIR/bin/pinns
COPYIMG_BIN=$CRIO_DIR/bin/copyimg

# bed_hash DIR: a stable hex digest of a test dir, used for names that must
# differ between concurrent beds (bridge, subnet, cgroup parent).
bed_hash() { printf '%s' "$1" | sha256sum | cut -c1-16; }

# bridge_name DIR: a per-bed Linux bridge name (at most 15 bytes).
bridge_name() { printf 'pbt%s\n' "$(bed_hash "$1" | cut -c1-10)"; }

# cgroup_parent DIR: the cgroupfs parent every pod of this bed is placed under.
# containerd, its shims and the runc they start run in a sibling,
# $BED_RUNTIME_CGROUP, as a node's containerd runs in its own systemd unit:
# the runtime's work (an exec probe's runc, a pod's set-up) then weighs as
# one cgroup against the node's agents, not as one cgroup per thread.
cgroup_parent() { printf '/probelet-testbed-%s\n' "$(bed_hash "$1" | cut -c1-10)"; }

# mkimage_sources: the mkimage program's Go files, tests excluded.
mkimage_sources() {
	local f
	for f in "$TESTBED_HACK"/mkimage/*.go; do
		case $f in *_test.go) ;; *) printf '%s\n' "$f" ;; esac
	done
}

# images_dir: the image cache directory, keyed by everything the images are
# made of, so a change to the pause or mkimage sources or to busybox rebuilds.
images_dir() {
	local key
	key=$({
		cat "$TESTBED_HACK/images.sh" "$TESTBED_HACK"/pause/*.go "$TESTBED_HACK"/grpchealth/*.go
		mkimage_sources | xargs cat
		dpkg-query -W -f='${Version}' busybox-static 2>/dev/null || true
		go version
	} | sha256sum | cut -c1-12)
	printf '%s/images@%s\n' "$TESTBED_CACHE" "$key"
}

# bed_runtime DIR: the runtime of the bed in DIR: the one it was first
# started with (DIR/runtime), else $PROBELET_TESTBED_RUNTIME, else containerd.
bed_runtime() {
	local r=${PROBELET_TESTBED_RUNTIME:-containerd}
	[ -f "$1/runtime" ] && r=$(cat "$1/runtime")
	case $r in containerd | crio) printf '%s\n' "$r" ;; *) die "unknown runtime '$r' (containerd or crio)" ;; esac
}

# bed_paths DIR: sets the per-bed paths every script agrees on. The runtime's
# files are named after it (containerd.sock, crio.sock, ...).
bed_paths() {
	BED_DIR=$1
	BED_RUNTIME=$(bed_runtime "$BED_DIR")
	BED_SOCK=$BED_DIR/$BED_RUNTIME.sock
	BED_NRI_SOCK=$BED_DIR/nri.sock
	BED_CONFIG=$BED_DIR/config.toml
	[ "$BED_RUNTIME" = crio ] && BED_CONFIG=$BED_DIR/crio.conf
	BED_PIDFILE=$BED_DIR/$BED_RUNTIME.pid
	BED_LOG=$BED_DIR/$BED_RUNTIME.log
	BED_ENVFILE=$BED_DIR/testbed.env
	BED_CRICTL_CONFIG=$BED_DIR/crictl.yaml
	BED_BRIDGE=$(bridge_name "$BED_DIR")
	BED_NETWORK=probelet-testbed-$(bed_hash "$BED_DIR" | cut -c1-10)
	BED_CGROUP_PARENT=$(cgroup_parent "$BED_DIR")
	BED_RUNTIME_CGROUP=$BED_CGROUP_PARENT-runtime
}

# runtime_pid: prints the PID of this bed's runtime if it is running; the
# command line must name this bed's config, so a reused PID is ignored.
runtime_pid() { pid_of "$BED_PIDFILE" "$BED_CONFIG"; }

# crictl_bed ARGS...: crictl against this bed's runtime.
crictl_bed() { "$CRICTL_BIN" --config "$BED_CRICTL_CONFIG" --runtime-endpoint "unix://$BED_SOCK" --image-endpoint "unix://$BED_SOCK" --timeout 10s "$@"; }

# join_cgroup NAME: moves the calling shell into cgroup NAME (a path from
# the root) of the cpu hierarchy (cgroup v1) or of the unified one (v2),
# creating it; what the shell then runs starts there.
join_cgroup() {
	local root=/sys/fs/cgroup/cpu
	[ -f /sys/fs/cgroup/cgroup.controllers ] && root=/sys/fs/cgroup
	[ -d "$root" ] || die "no cpu cgroup hierarchy at $root"
	mkdir -p "$root$1" || die "cannot create cgroup $root$1"
	echo "$BASHPID" >"$root$1/cgroup.procs" || die "cannot join cgroup $root$1"
}
