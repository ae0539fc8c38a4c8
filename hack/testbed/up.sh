#!/usr/bin/env bash
# up.sh DIR: starts a private containerd (or, with PROBELET_TESTBED_RUNTIME=crio,
# CRI-O) with CRI, NRI (socket DIR/nri.sock) and a CNI bridge, all state
# under DIR, and imports the test images. Builds what is missing first.
# Idempotent: a running bed is left alone; a bed keeps its first runtime.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=crio.sh
. "$(dirname "$0")/crio.sh"

# Unix socket paths are limited to 108 bytes; the longest one is the ttrpc socket.
MAX_DIR_LEN=80

# subnet_taken NET: whether NET.0/24 overlaps a route on this host (a real
# network, or another bed's bridge, which up.sh creates eagerly for this).
subnet_taken() {
	[ -n "$(ip -4 route show root "$1.0/24")" ] ||
		ip -4 route show match "$1.0/24" | grep -qv '^default'
}

# pick_subnet: a private /24 derived from the dir, moved on while taken.
pick_subnet() {
	local h a b i net
	h=$(bed_hash "$BED_DIR")
	a=$((64 + 0x${h:0:2} % 128)) b=$((0x${h:2:2}))
	for i in $(seq 0 255); do
		net="10.$a.$(((b + i) % 256))"
		subnet_taken "$net" || { printf '%s\n' "$net"; return 0; }
	done
	die "no free 10.$a.x.0/24 subnet"
}

# setup_network: picks the subnet and creates the bridge with its gateway
# address now, under a host-wide lock, so concurrent beds see each other's
# subnets (the CNI bridge plugin reuses the bridge). Re-runs keep both.
setup_network() {
	exec 8>"$TESTBED_CACHE/.network.lock"
	flock 8
	if [ ! -f "$BED_ENVFILE" ]; then
		local net
		net=$(pick_subnet)
		printf 'BRIDGE=%s\nSUBNET=%s.0/24\nGATEWAY=%s.1\nNETWORK=%s\nCGROUP_PARENT=%s\n' \
			"$BED_BRIDGE" "$net" "$net" "$BED_NETWORK" "$BED_CGROUP_PARENT" >"$BED_ENVFILE"
	fi
	# shellcheck source=/dev/null
	. "$BED_ENVFILE"
	if [ ! -e "/sys/class/net/$BRIDGE" ]; then
		ip link add name "$BRIDGE" type bridge
		ip addr add "$GATEWAY/24" dev "$BRIDGE"
		ip link set "$BRIDGE" up
	fi
	exec 8>&-
}

write_cni_config() {
	# shellcheck source=/dev/null
	. "$BED_ENVFILE"
	cat >"$BED_DIR/cni/conf/10-probelet-testbed.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "$NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$BED_DIR/cni/ipam",
        "ranges": [[{"subnet": "$SUBNET", "gateway": "$GATEWAY"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
}

# write_crictl_config: crictl otherwise warns about a missing /etc/crictl.yaml
# on every call. The timeout is the kubelet's --runtime-request-timeout
# (2m): a sandbox set up or torn down while containerd recovers from a
# restart on a loaded node can take longer than crictl's default (the soak
# saw RunPodSandbox exceed 10 s), and the kubelet would wait for it.
write_crictl_config() {
	printf 'runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 120\n' "$BED_SOCK" "$BED_SOCK" >"$BED_CRICTL_CONFIG"
}

write_containerd_config() {
	cat >"$BED_CONFIG" <<TOML
version = 3
root = "$BED_DIR/root"
state = "$BED_DIR/state"

[grpc]
  address = "$BED_SOCK"

[ttrpc]
  address = "$BED_SOCK.ttrpc"

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$PAUSE_IMAGE"

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "$RUNC_BIN"
        Root = "$BED_DIR/runc"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["$CNI_BIN_DIR"]
    conf_dir = "$BED_DIR/cni/conf"
    max_conf_num = 1

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[plugins."io.containerd.nri.v1.nri"]
  disable = false
  socket_path = "$BED_NRI_SOCK"
  plugin_path = "$BED_DIR/nri/plugins"
  plugin_config_path = "$BED_DIR/nri/conf"
  plugin_registration_timeout = "5s"
  plugin_request_timeout = "2s"
TOML
}

start_containerd() {
	LOG_START=$(($(wc -c 2>/dev/null <"$BED_LOG" || echo 0) + 1))
	# setsid: containerd outlives the caller's session and terminal; the
	# script is not a job-control shell, so $! is containerd itself.
	# env --default-signal: every signal at its default, as systemd starts
	# containerd, whatever the caller ignores (nohup: SIGHUP). An ignored
	# SIGHUP reaches an exec's command only when runc's own signal.Notify
	# happens to run after it started runc init, so ExecSync's answers
	# would depend on timing.
	# The subshell joins the runtime's cgroup and execs: $! is containerd.
	(
		join_cgroup "$BED_RUNTIME_CGROUP"
		PATH="$CONTAINERD_DIR/bin:$PATH" exec setsid env --default-signal "$CONTAINERD_BIN" --config "$BED_CONFIG"
	) </dev/null >>"$BED_LOG" 2>&1 &
	echo $! >"$BED_PIDFILE"
}

# wait_ready: polls CRI until the runtime and the network are ready. It
# watches the started PID itself: right after the fork its command line is
# still the shell's, so runtime_pid would not know it yet.
wait_ready() {
	local i status pid
	pid=$(cat "$BED_PIDFILE")
	for i in $(seq 1 300); do
		alive "$pid" || die "$BED_RUNTIME exited; its log:
$(tail -c "+$LOG_START" "$BED_LOG" | grep -v 'level=info' | tail -n 20)"
		status=$(crictl_bed info 2>/dev/null | jq -r '[.status.conditions[] | select(.status) | .type] | join(",")' 2>/dev/null || true)
		case ",$status," in *,RuntimeReady,*NetworkReady,* | *,NetworkReady,*RuntimeReady,*)
			runtime_pid >/dev/null || die "pid $pid is not this bed's $BED_RUNTIME"
			return 0
			;;
		esac
		sleep 0.1
	done
	die "$BED_RUNTIME at $BED_SOCK not ready after 30s; its log:
$(tail -c "+$LOG_START" "$BED_LOG" | tail -n 20)"
}

import_images() {
	local file out
	while IFS='=' read -r _ file; do
		out=$("$CTR_BIN" --address "$BED_SOCK" -n k8s.io images import --platform "linux/$(go env GOARCH)" "$file" 2>&1) ||
			die "importing $file failed: $out"
	done <<<"$IMAGES"
	# CRI's image store learns of an import from containerd's image events,
	# after ctr returned: on a busy machine that takes a while.
	local i
	for i in $(seq 1 300); do
		crictl_bed inspecti "$PAUSE_IMAGE" >/dev/null 2>&1 && crictl_bed inspecti "$BUSYBOX_IMAGE" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	die "images not visible to CRI 30s after import: $(crictl_bed images 2>&1 | tail -n 5)"
}

main() {
	[ $# -eq 1 ] || die "usage: up.sh DIR"
	[ "$(id -u)" -eq 0 ] || die "the test bed needs root"
	local dir
	dir=$(marked_dir "$BED_MARKER" "$1")
	bed_paths "$dir"
	[ ${#BED_DIR} -le $MAX_DIR_LEN ] || die "$BED_DIR is longer than $MAX_DIR_LEN bytes; unix socket paths under it would not fit"
	PROBELET_TESTBED_RUNTIME=$BED_RUNTIME "$TESTBED_HACK/build.sh" >/dev/null
	IMAGES=$("$TESTBED_HACK/images.sh")
	go_env
	mkdir -p "$BED_DIR"
	touch "$BED_DIR/$BED_MARKER"
	printf '%s\n' "$BED_RUNTIME" >"$BED_DIR/runtime"
	mkdir -p "$BED_DIR"/{root,state,runc,cni/conf,cni/ipam,nri/plugins,nri/conf}
	if pid=$(runtime_pid); then
		log "$BED_RUNTIME already running (pid $pid) for $BED_DIR"
	else
		setup_network
		write_cni_config
		write_crictl_config
		if [ "$BED_RUNTIME" = crio ]; then
			mount_hugetlb
			write_crio_config
			start_crio
		else
			write_containerd_config
			start_containerd
		fi
		wait_ready
		log "$BED_RUNTIME pid $(cat "$BED_PIDFILE") ready at $BED_SOCK"
	fi
	if [ "$BED_RUNTIME" = crio ]; then
		import_images_crio
	else
		import_images
	fi
	"$TESTBED_HACK/env.sh" "$BED_DIR"
}

main "$@"
