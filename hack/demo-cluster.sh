#!/usr/bin/env bash
# demo-cluster.sh up DIR | down DIR: probelet in a real two-node cluster.
#
#   up    starts a control plane (hack/cluster) and two nodes, each a
#         containerd test bed with a kubelet registered to the API server and
#         probelet running against it (deploy/'s rights: RBAC, admission
#         policies, a token bound to the node), and probelet-controller. It
#         applies a Deployment on each node whose readiness and liveness come
#         from probelet (the probelet.io/ready readiness gate), shows the pods
#         turning Ready, breaks one replica's app and shows the probelet Events
#         and the restart in `kubectl describe`. Then the safety net: probelet
#         killed on node a, a's pods marked not Ready by probelet-controller
#         after the grace period (b's left alone), and Ready again once
#         probelet is back. Last, the admission webhook: a plain Deployment
#         with kubelet probes in a namespace labelled probelet.io/probes=managed
#         gets pods whose probes probelet runs.
#   down  stops probelet and probelet-controller by their PIDs and tears
#         everything down. Idempotent.
#
# `make demo-cluster` / `make demo-cluster-down` run it with
# DIR=/tmp/pdc after `make build`. Needs root.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROBELET=$ROOT/bin/probelet
PROBECTL=$ROOT/bin/probectl
CONTROLLER=$ROOT/bin/probelet-controller
NODES="a b"

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
note() { printf '    %s\n' "$*"; }
die() {
	printf 'demo-cluster: %s\n' "$*" >&2
	exit 1
}

paths() {
	DIR=$(realpath -m "$1")
	# The admission webhook, on loopback (the API server runs here too).
	WEBHOOK=127.0.0.1:${PROBELET_DEMO_WEBHOOK_PORT:-9443}
	CDIR=$DIR/cluster
	CTL_PIDFILE=$DIR/controller.pid
	CTL_LOG=$DIR/controller.log
	CTL_KUBECONFIG=$DIR/controller.kubeconfig
}

# node N: the paths of node N (a or b) in NODE, BDIR, KDIR, PIDFILE, LOG,
# SOCK and PKUBECONFIG.
node() {
	NODE=probelet-demo-$1
	BDIR=$DIR/bed-$1
	KDIR=$DIR/kubelet-$1
	PIDFILE=$DIR/probelet-$1.pid
	LOG=$DIR/probelet-$1.log
	SOCK=$DIR/probelet-$1.sock
	PKUBECONFIG=$DIR/probelet-$1.kubeconfig
}

# pid_of PIDFILE MARK: the PID in PIDFILE if that process still runs with
# MARK in its command line (not a recycled PID).
pid_of() {
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$2" || return 1
	printf '%s\n' "$pid"
}

# stop_pid PIDFILE MARK SIGNAL WHAT
stop_pid() {
	local pid
	pid=$(pid_of "$1" "$2") || return 0
	note "stopping $4 (pid $pid, SIG$3)"
	kill "-$3" "$pid" 2>/dev/null || true
	for _ in $(seq 1 100); do
		[ -d "/proc/$pid" ] || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

stop_probelet() { stop_pid "$PIDFILE" "$SOCK" "${1:-TERM}" "probelet on $NODE"; }

kc() { "$PROBELET_KUBECTL_BIN" "$@"; }

# write_kubeconfig FILE USER TOKEN: a kubeconfig for the demo's API server.
write_kubeconfig() {
	local server
	server=$(kc config view --minify -o jsonpath='{.clusters[0].cluster.server}')
	KUBECONFIG=$1 kc config set-cluster demo --server "$server" --certificate-authority "$CDIR/pki/ca.crt" >/dev/null
	KUBECONFIG=$1 kc config set-credentials "$2" --token "$3" >/dev/null
	KUBECONFIG=$1 kc config set-context demo --cluster demo --user "$2" >/dev/null
	KUBECONFIG=$1 kc config use-context demo >/dev/null
	chmod 600 "$1"
}

# probelet_kubeconfig writes probelet's kubeconfig for the current node:
# its service account with a token bound to the node, as the DaemonSet
# pod's token is.
probelet_kubeconfig() {
	local uid token
	uid=$(kc get node "$NODE" -o jsonpath='{.metadata.uid}')
	token=$(kc create token probelet -n probelet-system --duration 24h \
		--bound-object-kind Node --bound-object-name "$NODE" --bound-object-uid "$uid")
	write_kubeconfig "$PKUBECONFIG" probelet "$token"
}

deployment() {
	cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-$1, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web-$1}}
  template:
    metadata:
      labels: {app: web-$1}
      annotations:
        probelet.io/probes: |
          {"web": {"livenessProbe":  {"tcpSocket": {"port": 8080}, "periodSeconds": 2},
                   "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 2},
                   "startupProbe":   {"exec": {"command": ["cat", "/tmp/started"]}, "periodSeconds": 1, "failureThreshold": 30}}}
    spec:
      nodeName: $NODE   # the demo cluster has no scheduler
      terminationGracePeriodSeconds: 3
      readinessGates: [{conditionType: probelet.io/ready}]
      containers:
        - name: web
          image: localhost/probelet/busybox:testbed
          imagePullPolicy: Never
          ports: [{name: http, containerPort: 8080}]
          command: [sh, -c, 'trap "exit 0" TERM; sleep 3; touch /tmp/started; httpd -f -p 8080 -h /var/www & wait; sleep 3600 & wait']
EOF
}

# plain_deployment is an ordinary Deployment with kubelet probes, as a
# chart would write it (on node a: the demo cluster has no scheduler).
plain_deployment() {
	cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      nodeName: probelet-demo-a
      terminationGracePeriodSeconds: 3
      containers:
        - name: web
          image: localhost/probelet/busybox:testbed
          imagePullPolicy: Never
          ports: [{name: http, containerPort: 8080}]
          command: [sh, -c, 'trap "exit 0" TERM; mkdir -p /www; echo ok > /www/index.html; httpd -f -p 8080 -h /www & wait']
          readinessProbe: {httpGet: {path: /, port: http}, periodSeconds: 2}
          livenessProbe: {tcpSocket: {port: 8080}, periodSeconds: 5}
EOF
}

# start_probelet: probelet on the current node, until its socket answers.
start_probelet() {
	if ! pid_of "$PIDFILE" "$SOCK" >/dev/null; then
		eval "$("$ROOT/hack/testbed/env.sh" "$BDIR")"
		setsid "$PROBELET" --nri-socket "$PROBELET_NRI_SOCKET" --runtime-endpoint "$PROBELET_CRI_ENDPOINT" \
			--listen "unix://$SOCK" --metrics-bind-address "" --state-dir "$BDIR/state" --kubeconfig "$PKUBECONFIG" --node-name "$NODE" \
			>>"$LOG" 2>&1 &
		echo $! >"$PIDFILE"
		disown # its SIGKILL below is the demo's, not news
	fi
	for _ in $(seq 1 100); do
		"$PROBECTL" --socket "unix://$SOCK" version >/dev/null 2>&1 && break
		sleep 0.1
	done
}

# gates prints each pod's node, Ready and probelet.io/ready with its reason.
gates() {
	kc get pods -o custom-columns='POD:.metadata.name,NODE:.spec.nodeName,READY:.status.conditions[?(@.type=="Ready")].status,PROBELET.IO/READY:.status.conditions[?(@.type=="probelet.io/ready")].status,REASON:.status.conditions[?(@.type=="probelet.io/ready")].reason'
}

# watch_gates SECONDS: gates every 5 s.
watch_gates() {
	local end=$((SECONDS + $1))
	while [ "$SECONDS" -lt "$end" ]; do
		printf '    --- %s\n' "$(date +%T)"
		gates | sed 's/^/    /'
		sleep 5
	done
}

up() {
	[ -x "$PROBELET" ] && [ -x "$PROBECTL" ] && [ -x "$CONTROLLER" ] || make -C "$ROOT" --no-print-directory build
	mkdir -p "$DIR"
	say "Starting a control plane and two nodes, each a containerd test bed and a kubelet (first run builds them: ~15 min)"
	[ -d "$CDIR" ] || mkdir -p "$CDIR"
	"$ROOT/hack/cluster/up.sh" "$CDIR" >/dev/null
	for n in $NODES; do
		node "$n"
		"$ROOT/hack/testbed/up.sh" "$BDIR" >/dev/null
		"$ROOT/hack/cluster/kubelet.sh" up --bed "$BDIR" --cluster "$CDIR" --node "$NODE" "$KDIR" >/dev/null
	done
	eval "$("$ROOT/hack/cluster/env.sh" "$CDIR")"
	export KUBECONFIG PROBELET_KUBECTL_BIN
	kc get nodes

	say "Giving probelet and probelet-controller deploy/'s rights: RBAC and the admission policies"
	for f in namespace serviceaccount rbac admission-policy lease-rbac lease-admission-policy; do
		kc apply -f "$ROOT/deploy/base/$f.yaml"
	done
	for f in serviceaccount rbac admission-policy; do
		kc apply -n probelet-system -f "$ROOT/deploy/controller/$f.yaml"
	done

	for n in $NODES; do
		node "$n"
		say "Starting probelet on $NODE (log: $LOG)"
		probelet_kubeconfig
		start_probelet
	done
	say "Starting probelet-controller and its admission webhook (log: $CTL_LOG)"
	# The webhook configuration as deploy/ has it, but calling the controller
	# on this machine (no Service network here); the controller fills in
	# its caBundle when it starts.
	kc apply -f "$ROOT/deploy/controller/webhook.yaml" -n probelet-system >/dev/null
	kc patch mutatingwebhookconfiguration probelet --type=json -p "[
		{\"op\": \"replace\", \"path\": \"/webhooks/0/clientConfig\", \"value\": {\"url\": \"https://$WEBHOOK/mutate-pods\"}},
		{\"op\": \"replace\", \"path\": \"/webhooks/1/clientConfig\", \"value\": {\"url\": \"https://$WEBHOOK/mutate-pods\"}}]" >/dev/null
	write_kubeconfig "$CTL_KUBECONFIG" probelet-controller "$(kc create token probelet-controller -n probelet-system --duration 24h)"
	if ! pid_of "$CTL_PIDFILE" "$CTL_KUBECONFIG" >/dev/null; then
		setsid "$CONTROLLER" --kubeconfig "$CTL_KUBECONFIG" --metrics-bind-address "" \
			--webhook-listen "$WEBHOOK" --webhook-cert-hosts "${WEBHOOK%:*}" >>"$CTL_LOG" 2>&1 &
		echo $! >"$CTL_PIDFILE"
		disown
	fi

	say "A Deployment on each node whose readiness and liveness come from probelet"
	for n in $NODES; do
		node "$n"
		deployment "$n" | kc apply -f -
	done
	note "kubectl get pods -w (20 s): READINESS GATES 0/1 until probelet's readiness succeeds"
	timeout 20 "$PROBELET_KUBECTL_BIN" get pods -w -o wide || true

	node a
	local pod ctr
	pod=$(kc get pods -l app=web-a -o jsonpath='{.items[0].metadata.name}')
	ctr=$(kc get pod "$pod" -o jsonpath='{.status.containerStatuses[0].containerID}')
	ctr=${ctr#*://}
	say "probectl on $NODE"
	"$PROBECTL" --socket "unix://$SOCK" ps

	say "Breaking $pod's app (killing httpd): readiness, then liveness fail"
	eval "$("$ROOT/hack/testbed/env.sh" "$BDIR")"
	$CRICTL exec -s "$ctr" killall httpd || true
	timeout 20 "$PROBELET_KUBECTL_BIN" get pods -w || true
	say "kubectl describe pod $pod (Events from probelet)"
	kc describe pod "$pod" | sed -n '/Conditions:/,/Volumes:/p;/Events:/,$p'

	say "The safety net: probelet killed on $NODE and kept down"
	note "Its node Lease is no longer renewed: after the 40 s grace period probelet-controller marks"
	note "$NODE's gated pods not Ready (ProbeletUnavailable); probelet-demo-b's pods are left alone."
	stop_probelet KILL
	watch_gates 55
	say "kubectl describe pod $pod (the controller's mark and Event)"
	kc describe pod "$pod" | sed -n '/Conditions:/,/Volumes:/p;/Events:/,$p'

	say "probelet back on $NODE: the conditions are its own again from its first probes"
	start_probelet
	watch_gates 10

	say "Adopting probelet without editing manifests: a namespace labelled probelet.io/probes=managed"
	kc create namespace shop >/dev/null 2>&1 || true
	kc label namespace shop probelet.io/probes=managed --overwrite
	note "A plain Deployment with kubelet probes; the webhook moves them into probelet's annotation at pod CREATE"
	plain_deployment | kc apply -n shop -f -
	timeout 20 "$PROBELET_KUBECTL_BIN" -n shop get pods -w -o wide || true
	pod=$(kc -n shop get pods -l app=shop -o jsonpath='{.items[0].metadata.name}')
	say "The Deployment keeps its probes; its pod $pod has probelet's annotation and gate instead"
	note "deployment readinessProbe: $(kc -n shop get deploy shop -o jsonpath='{.spec.template.spec.containers[0].readinessProbe}')"
	note "pod readinessProbe:        $(kc -n shop get pod "$pod" -o jsonpath='{.spec.containers[0].readinessProbe}')"
	note "pod probelet.io/probes:    $(kc -n shop get pod "$pod" -o jsonpath='{.metadata.annotations.probelet\.io/probes}')"
	note "pod readiness gates:       $(kc -n shop get pod "$pod" -o jsonpath='{.spec.readinessGates}')"
	say "Done. Explore: export KUBECONFIG=$KUBECONFIG; $PROBELET_KUBECTL_BIN get pods; $PROBECTL --socket unix://$SOCK why ..."
	note "probelet-controller's log: $CTL_LOG. Stop with: make demo-cluster-down"
}

down() {
	stop_pid "$CTL_PIDFILE" "$CTL_KUBECONFIG" TERM probelet-controller
	for n in $NODES; do
		node "$n"
		stop_probelet
		[ -d "$KDIR" ] && "$ROOT/hack/cluster/kubelet.sh" down "$KDIR" >/dev/null || true
		[ -d "$BDIR" ] && "$ROOT/hack/testbed/down.sh" "$BDIR" >/dev/null || true
	done
	[ -d "$CDIR" ] && "$ROOT/hack/cluster/down.sh" "$CDIR" >/dev/null || true
	rm -rf "$DIR"
	note "demo cluster removed"
}

[ $# -eq 2 ] || die "usage: demo-cluster.sh up DIR | down DIR"
[ "$(id -u)" -eq 0 ] || die "needs root (containerd, CNI, the kubelet)"
paths "$2"
case $1 in
up) up ;;
down) down ;;
*) die "usage: demo-cluster.sh up DIR | down DIR" ;;
esac
