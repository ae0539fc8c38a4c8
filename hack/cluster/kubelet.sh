#!/usr/bin/env bash
# kubelet.sh: a real kubelet on a containerd test bed (hack/testbed), all its
# state under one directory KDIR.
#
#   kubelet.sh up [OPTIONS] KDIR [-- KUBELET_FLAGS...]
#       --bed BEDDIR        the containerd test bed (required)
#       --cluster CDIR      register to the control plane in CDIR (up.sh);
#                           without it the kubelet runs standalone: static
#                           pods only, anonymous read-only and API ports
#       --node NAME         node name (default probelet-<hash of KDIR>)
#       --endpoint URL      --container-runtime-endpoint (default: the bed's
#                           containerd; e.g. a CRI proxy's socket)
#       --image-endpoint URL  (default: the bed's containerd)
#       --feature-gates G   e.g. EventedPLEG=true
#     Writes the config, starts the kubelet with setsid and waits until its
#     healthz answers (and, registered, its Node is Ready). Static pods go in
#     KDIR/manifests. Prints `kubelet.sh env KDIR`. A running kubelet is left alone.
#   kubelet.sh stop KDIR    stops the process only (state, mounts kept)
#   kubelet.sh start KDIR   starts it again as `up` last configured it
#   kubelet.sh down KDIR    stops it, unmounts under KDIR, removes its log
#                           symlinks, restores the host sysctls it changed
#                           (when no other kubelet of ours runs) and removes KDIR
#   kubelet.sh env KDIR     prints exports (ports, URLs, node name)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

START_TIMEOUT=60
# Unix sockets live under KDIR/root (pod-resources, device plugins).
MAX_DIR_LEN=60

# shellcheck source-path=SCRIPTDIR source=hoststate.sh
. "$CLUSTER_HACK/hoststate.sh"

kubelet_paths() {
	KL_DIR=$1
	KL_ROOT=$KL_DIR/root
	KL_CONFIG=$KL_DIR/config.yaml
	KL_ENVFILE=$KL_DIR/kubelet.env
	KL_ARGS=$KL_DIR/kubelet.args
	KL_PIDFILE=$KL_DIR/kubelet.pid
	KL_LOG=$KL_DIR/kubelet.log
}

kubelet_pid() { pid_of "$KL_PIDFILE" "$KL_CONFIG"; }

# kubelet_at CMD ARGS...: sets the kubelet paths from the one KDIR of
# `kubelet.sh CMD KDIR`.
kubelet_at() {
	local dir
	dir=$(dir_arg "kubelet.sh $1 KDIR" "$KUBELET_MARKER" "${@:2}")
	kubelet_paths "$dir"
}

# node_ip: the host's primary IPv4 (the source of its default route); the
# kubelet refuses a loopback --node-ip.
node_ip() {
	local ip
	ip=$(ip -4 -o route get 192.0.2.255 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
	[ -n "$ip" ] || ip=$(ip -4 -o addr show scope global | awk '{sub("/.*", "", $4); print $4; exit}')
	[ -n "$ip" ] || die "no IPv4 address for --node-ip"
	printf '%s\n' "$ip"
}

# write_config MODE: the KubeletConfiguration. cgroup v1 with cgroupfs and
# no QoS cgroups; pods go under the bed's cgroup parent, which the bed's
# down.sh removes. No iptables chains, no host dirs outside KDIR but
# /var/log/containers (hard-coded in the kubelet).
write_config() {
	local auth
	if [ "$1" = registered ]; then
		auth="authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $CL_DIR/pki/ca.crt}
authorization: {mode: Webhook}"
	else
		auth="authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}"
	fi
	local resolv=/etc/resolv.conf
	[ -f "$resolv" ] || resolv=""
	cat >"$KL_CONFIG" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $BIND_ADDRESS
port: $KUBELET_PORT
readOnlyPort: $READONLY_PORT
healthzBindAddress: 127.0.0.1
healthzPort: $HEALTHZ_PORT
$auth
containerRuntimeEndpoint: $ENDPOINT
imageServiceEndpoint: $IMAGE_ENDPOINT
staticPodPath: $KL_DIR/manifests
fileCheckFrequency: 1s
podLogsDir: $KL_DIR/pod-logs
volumePluginDir: $KL_DIR/volume-plugins
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_PARENT
cgroupsPerQOS: false
enforceNodeAllocatable: []
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
oomScoreAdj: 0
resolvConf: "$resolv"
rotateCertificates: false
serverTLSBootstrap: false
YAML
}

# node_credentials: a client certificate CN=system:node:NAME, O=system:nodes
# signed by the cluster CA (what the Node authorizer and NodeRestriction
# expect) and a kubeconfig using it.
node_credentials() {
	local pki=$KL_DIR/pki
	mkdir -p "$pki"
	chmod 700 "$pki"
	cp "$CL_DIR/pki/ca.crt" "$pki/"
	CA_DIR=$CL_DIR/pki leaf_cert "$pki" kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
	write_kubeconfig "$KL_DIR/kubeconfig" "$APISERVER_URL" "$pki/ca.crt" "$pki/kubelet.crt" "$pki/kubelet.key" "system:node:$NODE_NAME"
}

# pick_ports: the kubelet's three ports, free now (10250/10248/10255 may
# belong to another kubelet on this machine).
pick_ports() {
	local out ports
	out=$(free_ports 3)
	mapfile -t ports <<<"$out"
	KUBELET_PORT=${ports[0]} HEALTHZ_PORT=${ports[1]} READONLY_PORT=${ports[2]}
}

cmd_up() {
	local bed='' cluster='' extra=() pid
	NODE_NAME='' ENDPOINT='' IMAGE_ENDPOINT='' FEATURE_GATES=''
	while [ $# -gt 0 ]; do
		case $1 in
		--bed) bed=$2 ;;
		--cluster) cluster=$2 ;;
		--node) NODE_NAME=$2 ;;
		--endpoint) ENDPOINT=$2 ;;
		--image-endpoint) IMAGE_ENDPOINT=$2 ;;
		--feature-gates) FEATURE_GATES=$2 ;;
		--*) die "unknown option $1" ;;
		*) break ;;
		esac
		shift 2
	done
	[ $# -ge 1 ] || die "usage: kubelet.sh up --bed BEDDIR [--cluster CDIR] [--node NAME] [--endpoint URL] [--image-endpoint URL] [--feature-gates G] KDIR [-- FLAGS...]"
	local dir
	dir=$(marked_dir "$KUBELET_MARKER" "$1")
	shift
	if [ $# -gt 0 ]; then
		[ "$1" = -- ] || die "unexpected argument $1 (kubelet flags go after --)"
		shift
		extra=("$@")
	fi
	kubelet_paths "$dir"
	[ "$(id -u)" -eq 0 ] || die "the kubelet needs root"
	[ ${#KL_DIR} -le $MAX_DIR_LEN ] || die "$KL_DIR is longer than $MAX_DIR_LEN bytes; unix socket paths under it would not fit"
	if pid=$(kubelet_pid); then
		log "kubelet already running (pid $pid) in $KL_DIR"
		cmd_env "$KL_DIR"
		return 0
	fi
	[ -n "$bed" ] || die "--bed BEDDIR is required"
	bed=$(marked_dir "$BED_MARKER" "$bed")
	bed_paths "$bed"
	[ -f "$BED_ENVFILE" ] || die "$BED_DIR is not a running test bed (no testbed.env)"
	# shellcheck source=/dev/null
	CGROUP_PARENT=$(. "$BED_ENVFILE" && printf '%s' "$CGROUP_PARENT")
	"$CLUSTER_HACK/build.sh" >/dev/null
	[ -n "$NODE_NAME" ] || NODE_NAME=probelet-$(printf '%s' "$KL_DIR" | sha256sum | cut -c1-8)
	[ -n "$ENDPOINT" ] || ENDPOINT=unix://$BED_SOCK
	[ -n "$IMAGE_ENDPOINT" ] || IMAGE_ENDPOINT=unix://$BED_SOCK
	NODE_IP=$(node_ip)

	mkdir -p "$KL_DIR"
	touch "$KL_DIR/$KUBELET_MARKER"
	mkdir -p "$KL_ROOT" "$KL_DIR"/{manifests,pod-logs,volume-plugins}
	local mode=standalone
	if [ -n "$cluster" ]; then
		mode=registered
		cluster_paths "$(marked_dir "$CLUSTER_MARKER" "$cluster")"
		[ -f "$CL_ENVFILE" ] || die "$CL_DIR has no control plane (no cluster.env)"
		# shellcheck source=/dev/null
		. "$CL_ENVFILE"
		node_credentials
		# The API server reaches the kubelet at the node's InternalIP.
		BIND_ADDRESS=$NODE_IP
	else
		BIND_ADDRESS=127.0.0.1
	fi

	exec 8>"$PORTS_LOCK"
	flock 8 # until the kubelet listens: concurrent starts pick other ports
	pick_ports
	write_config "$mode"
	local args=(--config "$KL_CONFIG" --root-dir "$KL_ROOT" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP")
	[ "$mode" = standalone ] || args+=(--kubeconfig "$KL_DIR/kubeconfig")
	[ -z "$FEATURE_GATES" ] || args+=(--feature-gates "$FEATURE_GATES")
	args+=("${extra[@]}")
	printf '%s\0' "${args[@]}" >"$KL_ARGS"
	{
		printf 'MODE=%s\nNODE_NAME=%s\nNODE_IP=%s\nCRI_ENDPOINT=%s\nIMAGE_ENDPOINT=%s\n' \
			"$mode" "$NODE_NAME" "$NODE_IP" "$ENDPOINT" "$IMAGE_ENDPOINT"
		printf 'KUBELET_PORT=%s\nHEALTHZ_PORT=%s\nREADONLY_PORT=%s\n' "$KUBELET_PORT" "$HEALTHZ_PORT" "$READONLY_PORT"
		printf 'READONLY_URL=http://%s:%s\nHEALTHZ_URL=http://127.0.0.1:%s/healthz\n' "$BIND_ADDRESS" "$READONLY_PORT" "$HEALTHZ_PORT"
		printf 'CLUSTER_DIR=%s\nBED_DIR=%s\n' "${CL_DIR:-}" "$BED_DIR"
	} >"$KL_ENVFILE"
	host_lease_take "$KL_DIR"
	start_kubelet
	exec 8>&-
	[ "$mode" = standalone ] || wait_node_ready
	cmd_env "$KL_DIR"
}

# start_kubelet: starts the kubelet with the saved arguments and waits for
# its healthz (the runtime answered, PLEG runs).
start_kubelet() {
	local args=() a start=$SECONDS
	while IFS= read -r -d '' a; do args+=("$a"); done <"$KL_ARGS"
	# shellcheck source=/dev/null
	. "$KL_ENVFILE"
	# Without the ports lock's fd: the kubelet would hold the lock for life.
	setsid "$KUBELET_BIN" "${args[@]}" </dev/null >>"$KL_LOG" 2>&1 8>&- &
	echo $! >"$KL_PIDFILE"
	wait_http "$HEALTHZ_URL" "$START_TIMEOUT" "$(cat "$KL_PIDFILE")" kubelet "$KL_LOG"
	kubelet_pid >/dev/null || die "pid $(cat "$KL_PIDFILE") is not this kubelet"
	# shellcheck disable=SC2153 # MODE comes from the env file
	log "kubelet $NODE_NAME ($MODE) healthy in $((SECONDS - start))s, pid $(cat "$KL_PIDFILE")"
}

# wait_node_ready: polls the Node's Ready condition with the admin identity.
wait_node_ready() {
	local pki=$CL_DIR/pki ready
	for _ in $(seq 1 $((START_TIMEOUT * 10))); do
		ready=$(curl -fsS --max-time 2 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
			"$APISERVER_URL/api/v1/nodes/$NODE_NAME" 2>/dev/null |
			jq -r '.status.conditions[]? | select(.type == "Ready") | .status' 2>/dev/null || true)
		[ "$ready" = True ] && return 0
		kubelet_pid >/dev/null || die "kubelet exited; last lines of $KL_LOG:
$(tail -n 20 "$KL_LOG")"
		sleep 0.1
	done
	die "node $NODE_NAME not Ready after ${START_TIMEOUT}s"
}

cmd_start() {
	kubelet_at start "$@"
	[ -f "$KL_ARGS" ] || die "$KL_DIR was never set up (kubelet.sh up)"
	local pid
	if pid=$(kubelet_pid); then
		log "kubelet already running (pid $pid)"
	else
		exec 8>"$PORTS_LOCK"
		flock 8
		start_kubelet
		exec 8>&-
	fi
	cmd_env "$KL_DIR"
}

cmd_stop() {
	kubelet_at stop "$@"
	stop_pid "$KL_PIDFILE" "$KL_CONFIG" kubelet
}

# remove_log_links: the container log symlinks this kubelet made in
# /var/log/containers (they point into KDIR/pod-logs).
remove_log_links() {
	local l
	for l in "$CONTAINER_LOGS"/*; do
		[ -L "$l" ] || continue
		case $(readlink "$l") in "$KL_DIR"/*) rm -f "$l" ;; esac
	done
}

cmd_down() {
	kubelet_at down "$@"
	if [ -d "$KL_DIR" ]; then
		stop_pid "$KL_PIDFILE" "$KL_CONFIG" kubelet
		# The kubelet bind-mounts its root dir onto itself and leaves it on
		# exit; pod volumes (projected tokens are tmpfs) may be left too.
		unmount_all "$KL_DIR"
		remove_log_links
		rm -rf --one-file-system "$KL_DIR"
	fi
	host_lease_drop "$KL_DIR"
	log "kubelet $KL_DIR is down"
}

cmd_env() {
	kubelet_at env "$@"
	[ -f "$KL_ENVFILE" ] || die "$KL_DIR has no kubelet (no kubelet.env); run kubelet.sh up first"
	q() { printf '%q' "$1"; }
	# shellcheck source=/dev/null
	. "$KL_ENVFILE"
	cat <<EOS
export PROBELET_KUBELET_DIR=$(q "$KL_DIR")
export KUBELET_MODE=$(q "$MODE")
export KUBELET_NODE_NAME=$(q "$NODE_NAME")
export KUBELET_NODE_IP=$(q "$NODE_IP")
export KUBELET_PORT=$(q "$KUBELET_PORT")
export KUBELET_HEALTHZ_URL=$(q "$HEALTHZ_URL")
export KUBELET_READONLY_URL=$(q "$READONLY_URL")
export KUBELET_CRI_ENDPOINT=$(q "$CRI_ENDPOINT")
export KUBELET_MANIFESTS=$(q "$KL_DIR/manifests")
export KUBELET_LOG=$(q "$KL_LOG")
EOS
}

main() {
	[ $# -ge 1 ] || die "usage: kubelet.sh up|start|stop|down|env ..."
	local cmd=$1
	shift
	case $cmd in
	up) cmd_up "$@" ;;
	start) cmd_start "$@" ;;
	stop) cmd_stop "$@" ;;
	down) cmd_down "$@" ;;
	env) cmd_env "$@" ;;
	*) die "unknown command $cmd (up, start, stop, down, env)" ;;
	esac
}

main "$@"
