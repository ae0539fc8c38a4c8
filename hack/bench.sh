#!/usr/bin/env bash
# bench.sh: probelet's benchmarks in one run, each beside what it replaces,
# then a summary of the headline numbers. `make bench` runs it.
#
#   1. engine and handlers (go test -bench): the heap scheduler vs the
#      kubelet's goroutine+ticker workers, the NRI event handoff, spec
#      parsing, the socket's list calls, and one probe per handler
#      (network benchmarks with a fixed iteration count, so they leave a
#      bounded number of TIME_WAIT sockets);
#   2. (root) one TCP probe: kubelet-style dial vs the eBPF short-circuit;
#   3. (root) hack/bench/tcp: a node of TCP probes, CPU% and sockets per mode;
#   4. (root) hack/bench/startlatency: container start → first probe on a
#      real containerd, probelet vs a 1 s relist loop;
#   5. (root) hack/bench/criproxy: a real kubelet (Evented PLEG) at 100 pods,
#      kubelet → containerd vs kubelet → probelet's CRI proxy: containerd
#      CPU, the kubelet's relist duration, exit → PLEG event latency before
#      and after a containerd restart;
#   6. (root) the readiness gate on a real control plane and kubelet:
#      result change → condition seen by a watch, API writes per minute
#      with BENCH_READINESS_PODS pods flapping;
#   7. (root) exec probes at BENCH_EXEC_PODS pods: CPU per probe of
#      containerd, shims, runc, probelet and its helper, --exec-mode
#      runtime vs direct, on one containerd test bed; and the kubelet's own
#      exec probes through `probelet cri-proxy`, forwarded to containerd vs
#      --exec-mode direct;
#   8. (root) hack/bench/node: the whole agent on a real node, probelet
#      beside the real kubelet on the same pods: CPU per probe (TCP
#      short-circuit and dial, HTTP, gRPC, exec), RSS and syscalls per
#      probe, for BENCH_NODE_PODS pods (≈ 30 minutes per pod count: two
#      rounds per kind, alternating which agent goes first), both agents
#      with BENCH_NODE_CPUS Ps (GOMAXPROCS; default: Go's, one per CPU);
#  10. (root) the probe-state API on a real control plane: BENCH_API_PODS
#      pods of one namespace over two nodes (probelet's state listener over
#      a fixture), listed by a viewer through the aggregator: wall p50/p99,
#      CPU per list of kube-apiserver and probelet-controller, their RSS
#      (a node's own cost per read is BenchmarkListExplained in section 1);
#   9. hack/bench/engine: probelet's engine with its real handlers beside
#      the kubelet's worker model on real loopback sockets, in processes of
#      their own, models alternating: CPU and thread wake-ups (voluntary
#      context switches) per probe, with the Go default Ps and with
#      BENCH_ENGINE_CPUS of them;
#  11. (root) hack/bench/scale: probelet's cluster side on a real etcd and
#      kube-apiserver with BENCH_SCALE_NODES simulated nodes of 20 gated
#      pods each (probelet's own heartbeat and client per node, a kubelet's
#      Lease and status beside it) and two probelet-controller replicas:
#      their CPU and memory, time to mark a silent node's pods, the zone
#      rules, API calls by component, a webhook churn of BENCH_SCALE_CHURN,
#      etcd and API server memory (≈ 50 minutes; `make bench-scale` alone).
#
# Env: GO (default go), BENCH_NET_ITERATIONS (2000), BENCH_TCP_WINDOW (15s),
# BENCH_CONTAINERS (40), BENCH_PROXY_PODS (100), BENCH_PROXY_WINDOW (30s),
# BENCH_READINESS_PODS (100), BENCH_READINESS_WINDOW (2m), BENCH_EXEC_PODS
# (20), BENCH_EXEC_WINDOW (30s), BENCH_NODE_PODS (20,100), BENCH_NODE_WINDOW
# (60s), BENCH_NODE_CPUS (0: Go's default), BENCH_ENGINE_CPUS (8), BENCH_API_PODS (500),
# BENCH_API_LISTS (20), BENCH_SCALE_NODES (1000,5000), BENCH_SCALE_CHURN (5m), BENCH_ONLY (a section number to run alone).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
GO=${GO:-go}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
failed=()

section() { printf '\n\033[1m== %s. %s ==\033[0m\n' "$1" "$2"; }

# want N: whether section N runs (BENCH_ONLY picks one).
want() { [ -z "${BENCH_ONLY:-}" ] || [ "$BENCH_ONLY" = "$1" ]; }

# run N NAME CMD...: runs a section, keeping its output for the summary.
run() {
	local n=$1 name=$2
	shift 2
	want "$n" || return 0
	section "$n" "$name"
	if ! "$@" 2>&1 | tee "$OUT/$n"; then
		failed+=("$n. $name")
	fi
}

# root N NAME CMD...: like run, but sections that need root are skipped
# (with a note) for other users.
root() {
	if [ "$(id -u)" -ne 0 ]; then
		want "$1" && section "$1" "$2" && echo "skipped: needs root (eBPF, network namespaces, containerd)"
		return 0
	fi
	run "$@"
}

gobench() { "$GO" test -run='^$' -bench=. -benchmem "$@"; }

engine() {
	gobench ./prober/ ./lifecycle/ ./probespec/ ./cri/server/ &&
		wakefloor &&
		gobench -benchtime="${BENCH_NET_ITERATIONS:-2000}x" ./prober/probe/...
}

# wakefloor: the same timer wake-up as BenchmarkAlarmWakeUp from C, so the
# Go runtime's share of a wake-up shows beside the kernel's.
wakefloor() {
	local bin="$OUT/wakefloor"
	"${CC:-cc}" -O2 -o "$bin" hack/bench/wakefloor/wakefloor.c && "$bin" 250
}

# engineModels: hack/bench/engine with the Go default Ps, then with
# BENCH_ENGINE_CPUS of them (a larger node's).
engineModels() {
	"$GO" run ./hack/bench/engine -rounds 3 &&
		"$GO" run ./hack/bench/engine -rounds 3 -cpus "${BENCH_ENGINE_CPUS:-8}"
}

# summary: the headline numbers of every section that ran, side by side.
summary() {
	section S "Summary"
	if [ -s "$OUT/1" ]; then
		awk '/^BenchmarkEngine\/probes=10000/ {
				split($1, a, "/"); sub(/-[0-9]+$/, "", a[3]); printf "  engine, 10000 probes, %-24s %10s ns per probe cycle, %8s B kept per probe\n", a[3] ":", $3, $7 }
			/^BenchmarkContainerEventHandoff\/pods=1000/ { printf "  NRI event → engine handoff, 1000 pods cached: %s ns\n", $3 }
			/^BenchmarkListExplained/ { printf "  a node'"'"'s probe-state read, 250 pods: %.1f ms, %s bytes answered\n", $3 / 1e6, $5 }
			/^Benchmark(AlarmWakeUp\/timerfd|WakeUpFloor\/c-timerfd)/ {
				for (i = 1; i < NF; i++) if ($(i + 1) == "cpu-µs/wake-up") cpu = $i
				what = $1 ~ /Floor/ ? "the same from C:" : "the scheduler'"'"'s timer file:"
				printf "  one idle wake-up, %-29s %s cpu-µs\n", what, cpu }' "$OUT/1"
	fi
	if [ -s "$OUT/2" ]; then
		awk '/^BenchmarkTCPProbe\// { split($1, a, "/"); sub(/-[0-9]+$/, "", a[2]); ns[a[2]] = $3; printf "  one TCP probe, %-14s %10s ns, %s sockets left\n", a[2] ":", $3, $5 }
			END { if (ns["short-circuit"] > 0) printf "  short-circuit: %.0fx cheaper than a dial\n", ns["kubelet-dial"] / ns["short-circuit"] }' "$OUT/2"
	fi
	if [ -s "$OUT/3" ]; then
		sed -n '/^Node simulation/,/^mismatches/p' "$OUT/3" | grep -vE 'probes answered|unexpected' | sed 's/^/  /'
	fi
	if [ -s "$OUT/4" ]; then
		grep -E '^Container start|p50 +p99|NRI event →|target from' "$OUT/4" | sed 's/^/  /'
	fi
	if [ -s "$OUT/5" ]; then
		sed -n '/^CRI proxy side by side/,$p' "$OUT/5" | grep -E 'side by side|kubelet →|containerd CPU|relist_duration|ContainerDied|after a containerd|connection_error' | sed 's/^/  /'
	fi
	if [ -s "$OUT/6" ]; then
		grep -E 'readiness gate,|result change →|result changes' "$OUT/6" | sed 's/^ *readiness_bench_e2e_test.go:[0-9]*: */  /'
	fi
	if [ -s "$OUT/7" ]; then
		grep -E 'exec probes side by side|exec probes through the CRI proxy|CPU ms per probe|^ +exec_bench_e2e_test.go:[0-9]+: (total|net of idle)|cheaper than runtime|cheaper than through containerd' "$OUT/7" |
			sed 's/^ *exec_bench_e2e_test.go:[0-9]*: */  /'
	fi
	if [ -s "$OUT/8" ]; then
		sed -n '/^Summary/,$p' "$OUT/8" | sed 's/^/  /'
	fi
	if [ -s "$OUT/9" ]; then
		grep -vE '^round ' "$OUT/9" | sed 's/^/  /'
	fi
	if [ -s "$OUT/10" ]; then
		grep -E 'probe-state API, ' "$OUT/10" | sed 's/^ *probe_api_bench_e2e_test.go:[0-9]*: */  /'
	fi
	if [ -s "$OUT/11" ]; then
		# The last table holds every size.
		awk '/^probelet.s cluster side at scale/ { buf = "" } { buf = buf "  " $0 "\n" } END { printf "%s", buf }' "$OUT/11"
	fi
}

main() {
	run 1 "Engine and handlers (go test -bench; network handlers ${BENCH_NET_ITERATIONS:-2000}x)" engine
	root 2 "One TCP probe: kubelet-style dial vs eBPF short-circuit (go test -bench ./ebpf, 1000x)" \
		gobench -benchtime=1000x ./ebpf/
	root 3 "TCP node simulation (hack/bench/tcp)" \
		"$GO" run ./hack/bench/tcp -window "${BENCH_TCP_WINDOW:-15s}"
	root 4 "Container start → first probe (hack/bench/startlatency)" \
		"$GO" run ./hack/bench/startlatency -containers "${BENCH_CONTAINERS:-40}"
	root 5 "A kubelet through the CRI proxy vs straight to containerd (hack/bench/criproxy)" \
		"$GO" run ./hack/bench/criproxy -pods "${BENCH_PROXY_PODS:-100}" -window "${BENCH_PROXY_WINDOW:-30s}"
	root 6 "Readiness gate on a real cluster (e2e/readiness_bench_e2e_test.go)" \
		env PROBELET_E2E=1 "$GO" test -tags 'e2e bench' -count=1 -timeout 30m -run '^TestBenchReadinessCondition$' -v ./e2e/
	root 7 "Exec probes: --exec-mode runtime vs direct (e2e/exec_bench_e2e_test.go)" \
		env PROBELET_E2E=1 "$GO" test -tags 'e2e bench' -count=1 -timeout 15m -run '^(TestBenchExecProbes|TestBenchKubeletExecThroughProxy)$' -v ./e2e/
	root 8 "The whole agent on a real node, beside the kubelet (hack/bench/node)" \
		"$GO" run ./hack/bench/node -pods "${BENCH_NODE_PODS:-20,100}" -window "${BENCH_NODE_WINDOW:-60s}" -cpus "${BENCH_NODE_CPUS:-0}"
	run 9 "The engine on real sockets, beside the kubelet's worker model (hack/bench/engine)" engineModels
	root 10 "The probe-state API: a namespace's pods over two nodes, through the aggregator (e2e/probe_api_bench_e2e_test.go)" \
		env PROBELET_E2E=1 "$GO" test -tags 'e2e bench' -count=1 -timeout 15m -run '^TestBenchProbeStateList$' -v ./e2e/
	root 11 "The cluster side at scale: simulated nodes on a real API server (hack/bench/scale; about 50 minutes)" \
		"$GO" run ./hack/bench/scale -nodes "${BENCH_SCALE_NODES:-1000,5000}" -churn "${BENCH_SCALE_CHURN:-5m}"
	summary
	if [ ${#failed[@]} -gt 0 ]; then
		printf '\nbench: FAILED: %s\n' "${failed[*]}" >&2
		exit 1
	fi
}

main
