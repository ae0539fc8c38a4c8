#!/usr/bin/env bash
# demo.sh up DIR | down DIR: the probelet demo on a private containerd.
#
#   up    starts a containerd test bed in DIR (hack/testbed), runs bin/probelet
#         against it in the background (PID and log in DIR), runs a demo pod
#         through crictl (busybox httpd with an exec startup probe, an HTTP
#         readiness probe and a TCP liveness probe), shows the probes turning
#         green, breaks the app and shows probelet stopping the container,
#         then restarts it as the kubelet would. Running it again replays the
#         demo on the same bed.
#   down  stops probelet by its PID and tears the bed down. Idempotent.
#
# `make demo` / `make demo-down` run it with DIR=/tmp/probelet-demo after
# `make build`. Needs root.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TESTBED=$ROOT/hack/testbed
PROBELET=$ROOT/bin/probelet
PROBECTL=$ROOT/bin/probectl
DEMO_POD=demo
DEMO_CTR=web
# The demo app: a startup delay, then httpd as a child of the shell, so
# killing httpd leaves the container running and only the probes notice.
APP='trap "exit 0" TERM; echo warming up; sleep 3; touch /tmp/started; httpd -f -p 8080 -h /var/www & wait; echo httpd exited; sleep 3600 & wait'
PROBES='{"web": {"livenessProbe":  {"tcpSocket": {"port": 8080}, "periodSeconds": 2},
         "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 2},
         "startupProbe":   {"exec": {"command": ["cat", "/tmp/started"]}, "periodSeconds": 1, "failureThreshold": 30}}}'

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
note() { printf '    %s\n' "$*"; }
die() {
	printf 'demo: %s\n' "$*" >&2
	exit 1
}

usage() { die "usage: demo.sh up DIR | down DIR"; }

# paths DIR: everything the demo keeps lives in the bed's directory, which
# down.sh removes.
paths() {
	DIR=$(realpath -m "$1")
	PIDFILE=$DIR/probelet.pid
	LOG=$DIR/probelet.log
	SOCK=$DIR/probelet.sock
	SPECS=$DIR/demo
}

# probelet_pid: the PID of this demo's probelet, if it runs.
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
	note "probelet $pid ignored SIGTERM for 10s; killing it"
	kill -KILL "$pid" 2>/dev/null || true
}

probectl() { "$PROBECTL" --socket "unix://$SOCK" "$@"; }
crictl_bed() { $CRICTL "$@"; }

# ---- up ----------------------------------------------------------------

check_binaries() {
	if [ ! -x "$PROBELET" ] || [ ! -x "$PROBECTL" ]; then
		say "Building bin/probelet and bin/probectl (make build)"
		make -C "$ROOT" --no-print-directory build
	fi
}

start_bed() {
	say "Starting a private containerd test bed in $DIR"
	if [ ! -f "$DIR/containerd.pid" ]; then
		note "The first run on a machine builds containerd, runc, crictl and the CNI plugins"
		note "from the Go module proxy (about 2-3 minutes); later runs take about a second."
	fi
	local env
	env=$("$TESTBED/up.sh" "$DIR")
	eval "$env"
	note "containerd $(cat "$DIR/containerd.pid") is up: CRI at $CONTAINER_RUNTIME_ENDPOINT, NRI at $PROBELET_NRI_SOCKET"
}

start_probelet() {
	local pid
	if pid=$(probelet_pid); then
		say "probelet is already running (pid $pid)"
		return 0
	fi
	say "Starting probelet (log: $LOG)"
	setsid "$PROBELET" --nri-socket "$PROBELET_NRI_SOCKET" --runtime-endpoint "$PROBELET_CRI_ENDPOINT" \
		--listen "unix://$SOCK" --metrics-bind-address 127.0.0.1:0 --state-dir "$DIR/state" </dev/null >"$LOG" 2>&1 &
	echo $! >"$PIDFILE"
	for _ in $(seq 1 100); do
		if probectl version 2>/dev/null | grep -q 'NRI Connected: true'; then
			note "probelet $(cat "$PIDFILE") is registered with containerd over NRI and serves $SOCK"
			note "$(grep -o 'TCP probes are answered[^{]*' "$LOG" | head -n 1 | sed 's/[[:space:]]*$//')"
			return 0
		fi
		probelet_pid >/dev/null || die "probelet exited; its log:
$(tail -n 20 "$LOG")"
		sleep 0.1
	done
	die "probelet did not register with containerd within 10s; its log:
$(tail -n 20 "$LOG")"
}

# write_specs: the pod and container configs as the kubelet would pass them.
write_specs() {
	mkdir -p "$SPECS" "$DIR/logs/demo"
	# Each run is a new pod, so a new UID, as the API server would give it.
	UID_=probelet-demo-$(date +%s)
	jq -n --arg uid "$UID_" --arg probes "$PROBES" --arg logdir "$DIR/logs/demo" --arg cg "$PROBELET_TESTBED_CGROUP_PARENT" '{
		metadata: {name: "demo", namespace: "default", uid: $uid, attempt: 0},
		hostname: "demo", log_directory: $logdir,
		labels: {app: "demo"},
		annotations: {"probelet.io/probes": $probes},
		linux: {cgroup_parent: $cg}
	}' >"$SPECS/pod.json"
	local attempt
	for attempt in 0 1; do
		jq -n --arg uid "$UID_" --arg app "$APP" --arg img "$PROBELET_BUSYBOX_IMAGE" --argjson attempt $attempt '{
			metadata: {name: "web", attempt: $attempt},
			image: {image: $img},
			command: ["sh", "-c", $app],
			log_path: "web/\($attempt).log",
			labels: {"io.kubernetes.pod.name": "demo", "io.kubernetes.pod.namespace": "default",
				"io.kubernetes.pod.uid": $uid, "io.kubernetes.container.name": "web"},
			annotations: {"io.kubernetes.container.ports": "[{\"name\":\"http\",\"containerPort\":8080,\"protocol\":\"TCP\"}]",
				"io.kubernetes.pod.terminationGracePeriod": "5",
				"io.kubernetes.container.restartCount": "\($attempt)"},
			linux: {security_context: {namespace_options: {pid: 1}}}
		}' >"$SPECS/web-$attempt.json"
	done
}

run_pod() {
	local old
	for old in $(crictl_bed pods -q --name "^$DEMO_POD\$"); do
		note "removing the previous demo pod $old"
		crictl_bed rmp -f "$old" >/dev/null
	done
	write_specs
	say "Running the demo pod through crictl, with this probelet.io/probes annotation:"
	printf '%s\n' "$PROBES" | sed 's/^/    /'
	POD_ID=$(crictl_bed runp "$SPECS/pod.json")
	CTR_ID=$(start_container 0)
	note "pod $POD_ID, container $CTR_ID"
}

# start_container ATTEMPT: create and start the web container, print its ID.
start_container() {
	local id
	id=$(crictl_bed create "$POD_ID" "$SPECS/web-$1.json" "$SPECS/pod.json")
	crictl_bed start "$id" >/dev/null
	printf '%s\n' "$id"
}

# probe_lines JSON: one line per probe of the web container from `probectl
# ps -o json`: published result, current run of identical results, who
# answered, the last output.
probe_lines() {
	jq -r --arg id "$CTR_ID" '.[] | select(.containerId == $id) | .probes |
		to_entries[] | "\(.key | . + "       " | .[:10]) \(.value.result) (run of \(.value.consecutive)\(if .value.method == "" then "" else ", " + .value.method end)) last output: \(.value.lastOutput | rtrimstr("\n") | if . == "" then "-" else . end)"' <<<"$1"
}

# probed_since_start: a jq condition, the probe ran on this instance of the
# container (a restarted container's probes first show the last instance's).
probed_since_start() {
	local secs='(sub("[.][0-9]+"; "") | fromdate) + ((capture("[.](?<f>[0-9]+)") // {f: "0"}).f | "0." + . | tonumber)'
	printf '((.probes.%s.lastProbeTime // "1970-01-01T00:00:00Z") | %s) >= (.startedAt | %s)' "$1" "$secs" "$secs"
}

# show_until JQ_CONDITION TIMEOUT: prints `probectl ps` and the probes'
# last outputs whenever they change (the AGE column aside) until the web
# container satisfies the condition, then once more if the final state
# differs from the last one printed.
show_until() {
	local cond=$1 timeout=$2 start now json table lines last='' key done=''
	start=$(date +%s%N)
	while :; do
		now=$(date +%s%N)
		table=$(probectl ps 2>&1 || true)
		json=$(probectl ps -o json 2>/dev/null || echo '[]')
		lines=$(probe_lines "$json" || true)
		key=$(printf '%s\n' "$table" | awk '{$NF=""; print}')$lines
		if [ "$key" != "$last" ]; then
			printf '  [+%4.1fs]\n' "$(awk -v d=$((now - start)) 'BEGIN{print d/1e9}')"
			printf '%s\n' "$table" | sed 's/^/    /'
			printf '%s\n' "$lines" | sed 's/^/      /'
			last=$key
		elif [ -n "$done" ]; then
			return 0
		fi
		[ -n "$done" ] && return 0
		if jq -e --arg id "$CTR_ID" "[.[] | select(.containerId == \$id) | $cond] | any" <<<"$json" >/dev/null; then
			done=yes
			continue
		fi
		[ $((now - start)) -lt $((timeout * 1000000000)) ] || die "timed out after ${timeout}s waiting for: $cond"
		sleep 0.25
	done
}

show_green() {
	say "Watching the probes turn green (probectl ps; the startup probe waits for /tmp/started)"
	show_until ".started and .ready and $(probed_since_start liveness)" 60
	say "The container is started and ready: liveness and readiness ran only after startup succeeded."
}

break_app() {
	say "Breaking the app: killing httpd inside the container (crictl exec ... killall httpd)"
	note "The container keeps running, but nothing listens on :8080 any more. With periodSeconds 2"
	note "and failureThreshold 3 the liveness probe gives up after about 6 s and probelet stops the"
	note "container through CRI StopContainer with the pod's 5 s grace period, as the kubelet would."
	crictl_bed exec -s "$CTR_ID" killall httpd >/dev/null
	show_until '.state == "CONTAINER_EXITED"' 60
	say "probectl why web"
	probectl why "$DEMO_POD/$DEMO_CTR" | sed 's/^/    /'
	say "probectl describe web"
	probectl describe "$DEMO_POD/$DEMO_CTR" | sed 's/^/    /'
	say "containerd's view (crictl ps -a against containerd)"
	crictl_bed ps -a --pod "$POD_ID" | sed 's/^/    /'
}

restart_app() {
	say "Restarting the container as the kubelet would (attempt 1)"
	CTR_ID=$(start_container 1)
	note "new container $CTR_ID: probelet learns it from NRI at once and probes it"
	show_until ".started and .ready and $(probed_since_start liveness)" 60
}

next_steps() {
	local metrics
	metrics=$(grep -o '"address": "[^"]*"' "$LOG" | head -n 1 | cut -d'"' -f4)
	say "Done. probelet keeps running; try it yourself:"
	cat <<EOS
    export PROBELET_SOCKET=unix://$SOCK
    $PROBECTL ps -o wide                 # every container and its probes
    $PROBECTL describe $DEMO_POD/$DEMO_CTR               # spec, results, outputs, restarts issued
    $PROBECTL why $DEMO_POD/$DEMO_CTR                    # why not ready / why restarted
    $PROBECTL watch                      # result changes as they happen
    $CRICTL_BIN --runtime-endpoint unix://$SOCK ps                   # crictl reads probelet's socket
    $CRICTL_BIN --runtime-endpoint unix://$SOCK inspect $(printf '%.13s' "$CTR_ID")    # probe state in the verbose info
    curl -s http://$metrics/metrics | grep ^prober_probe_total
    tail -f $LOG

    eval "\$($TESTBED/env.sh $DIR)"    # sets \$CRICTL for containerd's own socket
    \$CRICTL exec -s $(printf '%.13s' "$CTR_ID") killall httpd             # break it again

    Tear everything down:  make demo-down   (or: $0 down $DIR)
EOS
}

up() {
	[ "$(id -u)" -eq 0 ] || die "the demo needs root (it starts containerd, runc, CNI and eBPF); try: sudo make demo"
	check_binaries
	start_bed
	CRICTL_BIN=${CRICTL%% *}
	start_probelet
	run_pod
	show_green
	break_app
	restart_app
	next_steps
}

# ---- down --------------------------------------------------------------

down() {
	[ "$(id -u)" -eq 0 ] || die "the demo needs root to stop; try: sudo make demo-down"
	say "Stopping the demo in $DIR"
	stop_probelet
	"$TESTBED/down.sh" "$DIR"
}

main() {
	[ $# -eq 2 ] || usage
	paths "$2"
	case $1 in
	up) up ;;
	down) down ;;
	*) usage ;;
	esac
}

main "$@"
