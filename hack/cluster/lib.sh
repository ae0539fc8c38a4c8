# shellcheck shell=bash disable=SC2034 # variables are for the scripts that source this
# lib.sh: versions, paths and helpers of the cluster scripts. Sourced, never
# run; callers set -euo pipefail themselves. It builds on the test bed's
# lib.sh, which brings the harness's shared half (hack/lib: cache, builds,
# processes, directories, gc) and the bed's paths (the kubelet runs on a bed).

# shellcheck source-path=SCRIPTDIR source=../testbed/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../testbed/lib.sh"
LOG_PREFIX=cluster

KUBERNETES_VERSION=v1.37.2
# v1.37 pins etcd 3.7.0 for its own tests; 3.6.8 (what v1.36 pins) serves
# the v1.37 API server as well and is the version verified on these machines.
ETCD_VERSION=v3.6.8
# The staging modules (k8s.io/api, client-go, ...) are published as v0.Y.Z
# for Kubernetes v1.Y.Z.
KUBE_STAGING_VERSION=v0.${KUBERNETES_VERSION#v1.}

CLUSTER_HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The assembled source tree is kept (reused when the binaries are rebuilt,
# and handy for reading the kubelet's code); the binaries are a separate
# component so a failed build never throws the tree away.
KUBERNETES_SRC_DIR=$TESTBED_CACHE/kubernetes-src@$KUBERNETES_VERSION
KUBERNETES_DIR=$TESTBED_CACHE/kubernetes@$KUBERNETES_VERSION
ETCD_DIR=$TESTBED_CACHE/etcd@$ETCD_VERSION

KUBE_APISERVER_BIN=$KUBERNETES_DIR/bin/kube-apiserver
KUBE_CONTROLLER_MANAGER_BIN=$KUBERNETES_DIR/bin/kube-controller-manager
KUBECTL_BIN=$KUBERNETES_DIR/bin/kubectl
KUBELET_BIN=$KUBERNETES_DIR/bin/kubelet
ETCD_BIN=$ETCD_DIR/bin/etcd

# CLUSTER_MARKER marks a directory as a control plane (down.sh deletes only
# those); KUBELET_MARKER marks a kubelet directory.
CLUSTER_MARKER=.probelet-cluster
KUBELET_MARKER=.probelet-kubelet

# PORTS_LOCK serializes picking ports and starting what listens on them.
PORTS_LOCK=$TESTBED_CACHE/.ports.lock

# free_port: a TCP port nothing listens on now, from 20000-32767: below
# the kernel's ephemeral range (32768+ here), so an outgoing connection does
# not take it between the pick and the bind. Callers hold PORTS_LOCK until
# their components listen, so concurrent clusters do not pick the same one.
free_port() {
	local port
	for _ in $(seq 1 200); do
		port=$((20000 + RANDOM % 12768))
		port_taken "$port" || { printf '%s\n' "$port"; return 0; }
	done
	die "no free TCP port found in 20000-32767"
}

# free_ports N: N distinct ports from free_port, one a line.
free_ports() {
	local ports=() p
	while [ ${#ports[@]} -lt "$1" ]; do
		p=$(free_port)
		case " ${ports[*]} " in *" $p "*) continue ;; esac
		ports+=("$p")
	done
	printf '%s\n' "${ports[@]}"
}

# port_taken PORT: whether anything listens on TCP PORT (any address).
port_taken() { [ -n "$(ss -Htln "sport = :$1" 2>/dev/null)" ]; }

# wait_http URL SECONDS PID NAME LOG [CURL ARGS...]: polls URL until it
# answers 200, failing early when PID exits.
wait_http() {
	local url=$1 secs=$2 pid=$3 name=$4 logf=$5
	shift 5
	for _ in $(seq 1 $((secs * 10))); do
		alive "$pid" || die "$name exited; last lines of $logf:
$(tail -n 20 "$logf")"
		curl -fsS -o /dev/null --max-time 2 "$@" "$url" 2>/dev/null && return 0
		sleep 0.1
	done
	die "$name not ready at $url after ${secs}s; last lines of $logf:
$(tail -n 20 "$logf")"
}

# cluster_paths DIR: sets the per-cluster paths every script agrees on.
cluster_paths() {
	CL_DIR=$1
	CL_PKI=$CL_DIR/pki
	CL_ENVFILE=$CL_DIR/cluster.env
	CL_ADMIN_KUBECONFIG=$CL_DIR/admin.kubeconfig
	CL_KCM_KUBECONFIG=$CL_DIR/controller-manager.kubeconfig
	CL_ETCD_DATA=$CL_DIR/etcd
}

# cert PKI NAME SUBJECT EXTS...: a P-256 key and a certificate in PKI signed
# by the CA in ${CA_DIR:-PKI} (or a self-signed CA when NAME is ca). EC keys
# are made in milliseconds; every component here accepts them.
cert() {
	local pki=$1 name=$2 subj=$3 out ca=${CA_DIR:-$1}
	shift 3
	local args=(req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -noenc -days 3650
		-keyout "$pki/$name.key" -out "$pki/$name.crt" -subj "$subj")
	[ "$name" = ca ] || args+=(-CA "$ca/ca.crt" -CAkey "$ca/ca.key")
	local e
	for e in "$@"; do args+=(-addext "$e"); done
	out=$(openssl "${args[@]}" 2>&1) || die "making $name certificate: $out"
	chmod 600 "$pki/$name.key"
}

# leaf_cert PKI NAME SUBJECT USAGE [SANS]: a client or server certificate.
leaf_cert() {
	local exts=("basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" "extendedKeyUsage=$4")
	[ -z "${5:-}" ] || exts+=("subjectAltName=$5")
	cert "$1" "$2" "$3" "${exts[@]}"
}

# write_kubeconfig FILE SERVER CA CERT KEY USER: a kubeconfig for one x509 user.
write_kubeconfig() {
	cat >"$1" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: probelet
  cluster:
    server: $2
    certificate-authority: $3
users:
- name: $6
  user:
    client-certificate: $4
    client-key: $5
contexts:
- name: probelet
  context:
    cluster: probelet
    user: $6
current-context: probelet
YAML
	chmod 600 "$1"
}
