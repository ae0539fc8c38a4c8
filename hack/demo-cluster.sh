#!/usr/bin/env bash
# demo-cluster.sh up DIR | down DIR: probelet in a real (one-node) cluster.
#
#   up    starts a control plane (hack/cluster), a containerd test bed and a
#         kubelet registered to the API server, gives probelet deploy/'s
#         rights (RBAC, admission policy) and a token bound to the node, runs
#         bin/probelet against the node, and applies a Deployment whose
#         readiness and liveness come from probelet (the probelet.io/ready
#         readiness gate). It shows `kubectl get pods -w` while the pods turn
#         Ready, breaks one replica's app, and shows the probelet Events and
#         the restart in `kubectl describe`.
#   down  stops probelet by its PID and tears everything down. Idempotent.
#
# `make demo-cluster` / `make demo-cluster-down` run it with
# DIR=/tmp/probelet-demo-cluster after `make build`. Needs root.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROBELET=$ROOT/bin/probelet
PROBECTL=$ROOT/bin/probectl
NODE=probelet-demo

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
note() { printf '    %s\n' "$*"; }
die() {
	printf 'demo-cluster: %s\n' "$*" >&2
	exit 1
}

paths() {
	DIR=$(realpath -m "$1")
	CDIR=$DIR/cluster
	BDIR=$DIR/bed
	KDIR=$DIR/kubelet
	PIDFILE=$DIR/probelet.pid
	LOG=$DIR/probelet.log
	SOCK=$DIR/probelet.sock
	PKUBECONFIG=$DIR/probelet.kubeconfig
}

probelet_pid() {
	local pid
	pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$SOCK" || return 1
	printf '%s\n' "$pid"
}

stop_probelet() {
	local pid
	pid=$(probelet_pid) || return 0
	note "stopping probelet (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 100); do
		[ -d "/proc/$pid" ] || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

kc() { "$PROBELET_KUBECTL_BIN" "$@"; }

# probelet_kubeconfig writes probelet's kubeconfig: its service account
# with a token bound to the node, as the DaemonSet pod's token is.
probelet_kubeconfig() {
	local uid token server
	uid=$(kc get node "$NODE" -o jsonpath='{.metadata.uid}')
	token=$(kc create token probelet -n probelet-system --duration 24h \
		--bound-object-kind Node --bound-object-name "$NODE" --bound-object-uid "$uid")
	server=$(kc config view --minify -o jsonpath='{.clusters[0].cluster.server}')
	KUBECONFIG=$PKUBECONFIG kc config set-cluster demo --server "$server" --certificate-authority "$CDIR/pki/ca.crt" >/dev/null
	KUBECONFIG=$PKUBECONFIG kc config set-credentials probelet --token "$token" >/dev/null
	KUBECONFIG=$PKUBECONFIG kc config set-context demo --cluster demo --user probelet >/dev/null
	KUBECONFIG=$PKUBECONFIG kc config use-context demo >/dev/null
	chmod 600 "$PKUBECONFIG"
}

deployment() {
	cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
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

up() {
	[ -x "$PROBELET" ] && [ -x "$PROBECTL" ] || make -C "$ROOT" --no-print-directory build
	mkdir -p "$DIR"
	say "Starting a control plane, a containerd test bed and a kubelet (first run builds them: ~15 min)"
	[ -d "$CDIR" ] || mkdir -p "$CDIR"
	"$ROOT/hack/cluster/up.sh" "$CDIR" >/dev/null
	"$ROOT/hack/testbed/up.sh" "$BDIR" >/dev/null
	"$ROOT/hack/cluster/kubelet.sh" up --bed "$BDIR" --cluster "$CDIR" --node "$NODE" "$KDIR" >/dev/null
	eval "$("$ROOT/hack/cluster/env.sh" "$CDIR")"
	eval "$("$ROOT/hack/testbed/env.sh" "$BDIR")"
	export KUBECONFIG PROBELET_KUBECTL_BIN
	kc get nodes

	say "Giving probelet deploy/'s rights: RBAC and the own-node admission policy"
	for f in namespace serviceaccount rbac admission-policy; do
		kc apply -f "$ROOT/deploy/base/$f.yaml"
	done
	probelet_kubeconfig

	say "Starting probelet on the node (log: $LOG)"
	if ! probelet_pid >/dev/null; then
		setsid "$PROBELET" --nri-socket "$PROBELET_NRI_SOCKET" --runtime-endpoint "$PROBELET_CRI_ENDPOINT" \
			--listen "unix://$SOCK" --metrics-bind-address "" --state-dir "$DIR/state" --kubeconfig "$PKUBECONFIG" --node-name "$NODE" \
			>"$LOG" 2>&1 &
		echo $! >"$PIDFILE"
	fi
	for _ in $(seq 1 100); do
		"$PROBECTL" --socket "unix://$SOCK" version >/dev/null 2>&1 && break
		sleep 0.1
	done

	say "A Deployment whose readiness and liveness come from probelet"
	deployment | kc apply -f -
	note "kubectl get pods -w (20 s): READINESS GATES 0/1 until probelet's readiness succeeds"
	timeout 20 "$PROBELET_KUBECTL_BIN" get pods -w -o wide || true

	local pod ctr
	pod=$(kc get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
	ctr=$(kc get pod "$pod" -o jsonpath='{.status.containerStatuses[0].containerID}')
	ctr=${ctr#*://}
	say "probectl on the node"
	"$PROBECTL" --socket "unix://$SOCK" ps

	say "Breaking $pod's app (killing httpd): readiness, then liveness fail"
	$CRICTL exec -s "$ctr" killall httpd || true
	timeout 20 "$PROBELET_KUBECTL_BIN" get pods -w || true
	say "kubectl describe pod $pod (Events from probelet)"
	kc describe pod "$pod" | sed -n '/Conditions:/,/Volumes:/p;/Events:/,$p'
	say "Done. Explore: export KUBECONFIG=$KUBECONFIG; $PROBELET_KUBECTL_BIN get pods; $PROBECTL --socket unix://$SOCK why ..."
	note "Stop with: make demo-cluster-down"
}

down() {
	stop_probelet
	[ -d "$KDIR" ] && "$ROOT/hack/cluster/kubelet.sh" down "$KDIR" >/dev/null || true
	[ -d "$BDIR" ] && "$ROOT/hack/testbed/down.sh" "$BDIR" >/dev/null || true
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
