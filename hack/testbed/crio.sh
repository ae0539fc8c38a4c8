# shellcheck shell=bash disable=SC2034 # LOG_START is for up.sh, which sources this
# crio.sh: up.sh's CRI-O half. Sourced after lib.sh, never run. Every file
# CRI-O keeps lives under the bed's directory; nothing in /etc, /var/lib or
# /var/run is read or written (CRI-O's defaults all point there).

# write_crio_config: CRI-O's configuration, as one file (-c) with no drop-in
# directory. The runtime is the bed's runc under conmon, in cgroupfs (the
# bed's cgroup v1 machine; conmon then goes into the pod's cgroup, the only
# place cgroupfs allows). NRI listens on DIR/nri.sock like containerd's.
write_crio_config() {
	mkdir -p "$BED_DIR"/{storage,storage-run,pod-logs,run/exits,ns,hooks,runc/crio,cdi,nri/plugins,nri/conf}
	printf '{"default":[{"type":"insecureAcceptAnything"}]}\n' >"$BED_DIR/policy.json"
	printf 'unqualified-search-registries = []\n' >"$BED_DIR/registries.conf"
	cat >"$BED_CONFIG" <<TOML
[crio]
root = "$BED_DIR/storage"
runroot = "$BED_DIR/storage-run"
storage_driver = "overlay"
log_dir = "$BED_DIR/pod-logs"
version_file = "$BED_DIR/run/version"
clean_shutdown_file = "$BED_DIR/clean.shutdown"

[crio.api]
listen = "$BED_SOCK"
stream_address = "127.0.0.1"
stream_port = "0"

[crio.runtime]
default_runtime = "runc"
cgroup_manager = "cgroupfs"
conmon_env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
container_exits_dir = "$BED_DIR/run/exits"
container_attach_socket_dir = "$BED_DIR/run"
namespaces_dir = "$BED_DIR/ns"
pinns_path = "$PINNS_BIN"
hooks_dir = ["$BED_DIR/hooks"]
cdi_spec_dirs = ["$BED_DIR/cdi"]
decryption_keys_path = "$BED_DIR/keys"
enable_criu_support = false
# GetContainerEvents, off by default: the kubelet's Evented PLEG and the CRI
# proxy's memo (dropped on the runtime's own events) need it.
enable_pod_events = true
irqbalance_config_file = ""
irqbalance_config_restore_file = "disable"
seccomp_profile = ""
apparmor_profile = ""
log_level = "info"

[crio.runtime.runtimes.runc]
runtime_path = "$RUNC_BIN"
runtime_type = "oci"
runtime_root = "$BED_DIR/runc/crio"
monitor_path = "/usr/bin/conmon"
monitor_cgroup = "pod"

[crio.image]
pause_image = "$PAUSE_IMAGE"
pause_command = "/pause"
pinned_images = ["$PAUSE_IMAGE"]
signature_policy = "$BED_DIR/policy.json"
signature_policy_dir = "$BED_DIR/policies"

[crio.network]
network_dir = "$BED_DIR/cni/conf"
plugin_dirs = ["$CNI_BIN_DIR"]

[crio.metrics]
enable_metrics = false

[crio.nri]
enable_nri = true
nri_listen = "$BED_NRI_SOCK"
nri_plugin_dir = "$BED_DIR/nri/plugins"
nri_plugin_config_dir = "$BED_DIR/nri/conf"
nri_plugin_registration_timeout = "5s"
nri_plugin_request_timeout = "2s"
TOML
}

# mount_hugetlb: on a cgroup v1 machine whose hugetlb controller sits
# unmounted on the unified hierarchy (this VM's hybrid layout), mounts it
# as a v1 hierarchy, as systemd mounts every v1 controller on a node.
# CRI-O sees hugetlb in /proc/cgroups and passes the kubelet's hugepage
# limits to runc, which cannot apply them without the v1 mount ("cannot
# set hugetlb limit"); containerd leaves them out. Host-wide and
# idempotent, under the network lock every bed takes.
mount_hugetlb() {
	[ -f /sys/fs/cgroup/cgroup.controllers ] && return 0 # cgroup v2: nothing to do
	grep -q '^hugetlb' /proc/cgroups || return 0
	hugetlb_mounted && return 0
	(
		flock 8
		hugetlb_mounted && exit 0
		mkdir -p /sys/fs/cgroup/hugetlb
		mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb ||
			die "cannot mount the hugetlb cgroup hierarchy (CRI-O would pass hugepage limits runc cannot apply)"
		log "mounted the hugetlb cgroup v1 hierarchy at /sys/fs/cgroup/hugetlb"
	) 8>"$TESTBED_CACHE/.network.lock"
}

# hugetlb_mounted: whether a cgroup v1 hierarchy with hugetlb is mounted.
hugetlb_mounted() {
	awk '/ - cgroup / && $NF ~ /(^|,)hugetlb(,|$)/ {found = 1} END {exit !found}' /proc/self/mountinfo
}

# start_crio: as start_containerd, for CRI-O; its registries configuration
# has no key in crio.conf, only a flag.
start_crio() {
	LOG_START=$(($(wc -c 2>/dev/null <"$BED_LOG" || echo 0) + 1))
	(
		join_cgroup "$BED_RUNTIME_CGROUP"
		exec setsid env --default-signal "$CRIO_BIN" -c "$BED_CONFIG" -d "" \
			--registries-conf "$BED_DIR/registries.conf" --registries-conf-dir "$BED_DIR/registries.d"
	) </dev/null >>"$BED_LOG" 2>&1 &
	echo $! >"$BED_PIDFILE"
}

# import_images_crio: copies the OCI archives into CRI-O's storage. CRI-O
# reads its storage while it runs, so the copy goes through copyimg (CRI-O's
# test tool, containers/storage's locks) and CRI-O sees it at once.
import_images_crio() {
	local name file
	while IFS='=' read -r name file; do
		local ref=$PAUSE_IMAGE
		[ "$name" = busybox ] && ref=$BUSYBOX_IMAGE
		crictl_bed inspecti "$ref" >/dev/null 2>&1 && continue
		out=$("$COPYIMG_BIN" --root "$BED_DIR/storage" --runroot "$BED_DIR/storage-run" --storage-driver overlay \
			--signature-policy "$BED_DIR/policy.json" --import-from "oci-archive:$file" --image-name "$ref" 2>&1) ||
			die "importing $file into CRI-O failed: $out"
	done <<<"$IMAGES"
	if ! crictl_bed inspecti "$PAUSE_IMAGE" >/dev/null 2>&1 || ! crictl_bed inspecti "$BUSYBOX_IMAGE" >/dev/null 2>&1; then
		die "images not visible to CRI-O after import: $(crictl_bed images 2>&1 | tail -n 5)"
	fi
}
