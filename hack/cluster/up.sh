#!/usr/bin/env bash
# up.sh [--feature-gates GATES] [--controllers LIST] DIR: starts a private
# Kubernetes control plane on loopback with all its state under DIR: a CA
# and certificates, etcd, kube-apiserver and kube-controller-manager on free
# ports, and an admin kubeconfig (DIR/admin.kubeconfig). Waits until the API
# server is ready and the default ServiceAccount exists, then prints env.sh.
# Builds what is missing first. Idempotent: running components are left alone.
#   --feature-gates  passed to kube-apiserver and kube-controller-manager
#   --controllers    kube-controller-manager --controllers (default '*'; API-only
#                    tests may want '*,-podgc,-node-lifecycle-controller')
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# SERVICE_CIDR is only a range the API server allocates from: nothing routes
# it (no kube-proxy), and it is outside the test beds' 10.64-191 subnets.
SERVICE_CIDR=10.254.0.0/24
SERVICE_IP=10.254.0.1
START_TIMEOUT=60

make_pki() {
	[ -f "$CL_PKI/.complete" ] && [ -f "$CL_PKI/front-proxy/client.crt" ] && return 0
	rm -rf "$CL_PKI"
	mkdir -m 700 "$CL_PKI"
	cert "$CL_PKI" ca "/CN=probelet-cluster-ca" "basicConstraints=critical,CA:TRUE" \
		"keyUsage=critical,digitalSignature,keyCertSign,cRLSign"
	leaf_cert "$CL_PKI" apiserver "/CN=kube-apiserver" serverAuth \
		"IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
	leaf_cert "$CL_PKI" admin "/O=system:masters/CN=probelet-admin" clientAuth
	leaf_cert "$CL_PKI" controller-manager "/CN=system:kube-controller-manager" clientAuth
	# The API server's client certificate for kubelets (logs, exec): the
	# kubelet's webhook authorizer asks RBAC, and system:masters may all.
	leaf_cert "$CL_PKI" apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
	local out
	out=$(openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$CL_PKI/sa.key" 2>&1 &&
		openssl pkey -in "$CL_PKI/sa.key" -pubout -out "$CL_PKI/sa.pub" 2>&1) || die "making the service account key: $out"
	chmod 600 "$CL_PKI/sa.key"
	# The aggregator's own CA and client certificate: the API server calls
	# aggregated APIs (probelet's probes.probelet.io) with it, naming the
	# user in X-Remote-* headers those servers trust for this CA only.
	mkdir -m 700 "$CL_PKI/front-proxy"
	cert "$CL_PKI/front-proxy" ca "/CN=probelet-front-proxy-ca" "basicConstraints=critical,CA:TRUE" \
		"keyUsage=critical,digitalSignature,keyCertSign,cRLSign"
	CA_DIR="$CL_PKI/front-proxy" leaf_cert "$CL_PKI/front-proxy" client "/CN=front-proxy-client" clientAuth
	touch "$CL_PKI/.complete"
}

# pick_ports: four distinct free ports, chosen once per cluster so the
# kubeconfigs stay valid when a component is restarted.
pick_ports() {
	[ -f "$CL_ENVFILE" ] && return 0
	local out ports
	out=$(free_ports 4)
	mapfile -t ports <<<"$out"
	printf 'ETCD_PORT=%s\nETCD_PEER_PORT=%s\nAPISERVER_PORT=%s\nKCM_PORT=%s\nAPISERVER_URL=https://127.0.0.1:%s\n' \
		"${ports[0]}" "${ports[1]}" "${ports[2]}" "${ports[3]}" "${ports[2]}" >"$CL_ENVFILE.tmp"
	mv "$CL_ENVFILE.tmp" "$CL_ENVFILE"
}

# launch NAME CMD...: starts CMD in its own session with its output in
# DIR/NAME.log and its PID in DIR/NAME.pid. The script is not a job-control
# shell, so $! is the command itself (setsid execs it). The ports lock's fd
# is closed for it: a daemon holding it would block every later start.
launch() {
	local name=$1
	shift
	setsid "$@" </dev/null >>"$CL_DIR/$name.log" 2>&1 8>&- &
	echo $! >"$CL_DIR/$name.pid"
}

start_etcd() {
	pid_of "$CL_DIR/etcd.pid" "$CL_ETCD_DATA" >/dev/null && return 0
	launch etcd "$ETCD_BIN" --name probelet --data-dir "$CL_ETCD_DATA" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster "probelet=http://127.0.0.1:$ETCD_PEER_PORT" \
		--unsafe-no-fsync --log-level warn
	wait_http "http://127.0.0.1:$ETCD_PORT/health" "$START_TIMEOUT" "$(cat "$CL_DIR/etcd.pid")" etcd "$CL_DIR/etcd.log"
}

# start_apiserver: --endpoint-reconciler-type none because the kubernetes
# Service would get a loopback endpoint; --kubelet-preferred-address-types
# starts with InternalIP because the node's hostname does not resolve;
# --enable-aggregator-routing because there is no kube-proxy to route a
# Service's ClusterIP: the API server calls admission webhooks (the Helm
# chart's) at their endpoints' IPs instead.
start_apiserver() {
	pid_of "$CL_DIR/kube-apiserver.pid" "$CL_PKI/apiserver.crt" >/dev/null && return 0
	local gates=()
	[ -z "$FEATURE_GATES" ] || gates=(--feature-gates "$FEATURE_GATES")
	launch kube-apiserver "$KUBE_APISERVER_BIN" \
		--etcd-servers "http://127.0.0.1:$ETCD_PORT" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
		--tls-cert-file "$CL_PKI/apiserver.crt" --tls-private-key-file "$CL_PKI/apiserver.key" \
		--client-ca-file "$CL_PKI/ca.crt" \
		--authorization-mode Node,RBAC \
		--enable-admission-plugins NodeRestriction \
		--service-account-issuer https://kubernetes.default.svc \
		--service-account-key-file "$CL_PKI/sa.pub" --service-account-signing-key-file "$CL_PKI/sa.key" \
		--service-cluster-ip-range "$SERVICE_CIDR" \
		--endpoint-reconciler-type none \
		--kubelet-preferred-address-types InternalIP,ExternalIP,Hostname \
		--enable-aggregator-routing=true \
		--requestheader-client-ca-file "$CL_PKI/front-proxy/ca.crt" --requestheader-allowed-names front-proxy-client \
		--requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
		--requestheader-extra-headers-prefix X-Remote-Extra- \
		--proxy-client-cert-file "$CL_PKI/front-proxy/client.crt" --proxy-client-key-file "$CL_PKI/front-proxy/client.key" \
		--kubelet-client-certificate "$CL_PKI/apiserver-kubelet-client.crt" \
		--kubelet-client-key "$CL_PKI/apiserver-kubelet-client.key" \
		--allow-privileged=true --profiling=false "${gates[@]}"
	wait_http "$APISERVER_URL/readyz" "$START_TIMEOUT" "$(cat "$CL_DIR/kube-apiserver.pid")" kube-apiserver \
		"$CL_DIR/kube-apiserver.log" --cacert "$CL_PKI/ca.crt" --cert "$CL_PKI/admin.crt" --key "$CL_PKI/admin.key"
}

start_controller_manager() {
	pid_of "$CL_DIR/kube-controller-manager.pid" "$CL_KCM_KUBECONFIG" >/dev/null && return 0
	local gates=()
	[ -z "$FEATURE_GATES" ] || gates=(--feature-gates "$FEATURE_GATES")
	launch kube-controller-manager "$KUBE_CONTROLLER_MANAGER_BIN" \
		--kubeconfig "$CL_KCM_KUBECONFIG" \
		--authentication-kubeconfig "$CL_KCM_KUBECONFIG" --authorization-kubeconfig "$CL_KCM_KUBECONFIG" \
		--bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
		--use-service-account-credentials=true \
		--service-account-private-key-file "$CL_PKI/sa.key" --root-ca-file "$CL_PKI/ca.crt" \
		--cluster-signing-cert-file "$CL_PKI/ca.crt" --cluster-signing-key-file "$CL_PKI/ca.key" \
		--leader-elect=false --controllers "$CONTROLLERS" --profiling=false "${gates[@]}"
	wait_http "https://127.0.0.1:$KCM_PORT/healthz" "$START_TIMEOUT" "$(cat "$CL_DIR/kube-controller-manager.pid")" \
		kube-controller-manager "$CL_DIR/kube-controller-manager.log" --insecure # its serving cert is self-signed
}

# wait_default_sa: pods are rejected by the ServiceAccount admission plugin
# until the serviceaccount controller made default/default (~5 s).
wait_default_sa() {
	local pid
	pid=$(cat "$CL_DIR/kube-controller-manager.pid")
	for _ in $(seq 1 $((START_TIMEOUT * 10))); do
		curl -fsS -o /dev/null --max-time 2 --cacert "$CL_PKI/ca.crt" --cert "$CL_PKI/admin.crt" --key "$CL_PKI/admin.key" \
			"$APISERVER_URL/api/v1/namespaces/default/serviceaccounts/default" 2>/dev/null && return 0
		alive "$pid" || die "kube-controller-manager exited; last lines of its log:
$(tail -n 20 "$CL_DIR/kube-controller-manager.log")"
		sleep 0.1
	done
	die "no default/default ServiceAccount after ${START_TIMEOUT}s"
}

main() {
	FEATURE_GATES='' CONTROLLERS='*'
	while [ $# -gt 1 ]; do
		case $1 in
		--feature-gates) FEATURE_GATES=$2 ;;
		--controllers) CONTROLLERS=$2 ;;
		*) die "unknown option $1" ;;
		esac
		shift 2
	done
	[ $# -eq 1 ] || die "usage: up.sh [--feature-gates GATES] [--controllers LIST] DIR"
	local dir start=$SECONDS
	dir=$(marked_dir "$CLUSTER_MARKER" "$1")
	cluster_paths "$dir"
	"$CLUSTER_HACK/build.sh" >/dev/null
	mkdir -p "$CL_DIR"
	touch "$CL_DIR/$CLUSTER_MARKER"
	make_pki
	exec 8>"$PORTS_LOCK"
	flock 8 # held until everything listens: concurrent clusters pick other ports
	pick_ports
	# shellcheck source=/dev/null
	. "$CL_ENVFILE"
	write_kubeconfig "$CL_ADMIN_KUBECONFIG" "$APISERVER_URL" "$CL_PKI/ca.crt" "$CL_PKI/admin.crt" "$CL_PKI/admin.key" probelet-admin
	write_kubeconfig "$CL_KCM_KUBECONFIG" "$APISERVER_URL" "$CL_PKI/ca.crt" "$CL_PKI/controller-manager.crt" \
		"$CL_PKI/controller-manager.key" system:kube-controller-manager
	start_etcd
	start_apiserver
	start_controller_manager
	exec 8>&-
	wait_default_sa
	log "control plane ready at $APISERVER_URL in $((SECONDS - start))s ($CL_DIR)"
	"$CLUSTER_HACK/env.sh" "$CL_DIR"
}

main "$@"
