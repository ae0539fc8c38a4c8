//go:build e2e

package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
)

const (
	// floodPods print 16 MiB to stdout and to stderr from their exec
	// readiness probes, every floodPeriod, all in the same second.
	floodPods   = 10
	floodPeriod = 10 * time.Second
	// floodUnitMemory and floodGoMemLimit are the proxy unit's
	// (deploy/systemd/probelet-cri-proxy.service).
	floodUnitMemory = 256 << 20
	floodGoMemLimit = "GOMEMLIMIT=192MiB"
	// victimPeriod is the victim's exec readiness probe's period.
	victimPeriod = 2 * time.Second
)

// floodWindow is how long the flood lasts: FLOOD_DURATION, by default
// four flood periods (CI's budget; the three minutes with
// FLOOD_DURATION=3m).
func floodWindow(t *testing.T) time.Duration {
	t.Helper()
	if v := os.Getenv("FLOOD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < floodPeriod {
			t.Fatalf("FLOOD_DURATION=%q: want a duration of at least %v", v, floodPeriod)
		}
		return d
	}
	return 4 * floodPeriod
}

// TestCRIProxyOutlivesATenantsExecOutputFlood: a real kubelet through the
// proxy, the proxy in a memory cgroup of its unit's size with its
// GOMEMLIMIT. Ten tenant pods whose exec probes print 16 MiB to stdout
// and to stderr, all in the same second every 10 s; beside them a victim
// whose exec readiness probe runs every 2 s. In both exec modes: the proxy
// is never OOM-killed and never exits, the kubelet's runtime calls other
// than the tenant's ExecSync never fail, and the victim stays Ready with
// every probe on time.
func TestCRIProxyOutlivesATenantsExecOutputFlood(t *testing.T) {
	for _, mode := range []string{"runtime", "direct"} {
		t.Run(mode, func(t *testing.T) { outliveExecOutputFlood(t, mode) })
	}
}

func outliveExecOutputFlood(t *testing.T, mode string) {
	bed := testbed.Start(t)
	cg := memoryCgroup(t, "flood-"+mode, floodUnitMemory)
	proxy := startCRIProxyUnder(t, bed, inCgroup(cg, floodGoMemLimit), "--exec-mode", mode)
	endpoint := proxyEndpoint(bed)
	k := cluster.StartStandaloneKubelet(t, bed, cluster.WithNodeName("flood-"+mode),
		cluster.WithCRIEndpoint(endpoint), cluster.WithImageEndpoint(endpoint), cluster.WithKubeletArgs("--v=1"))

	// The floods wait for the next multiple of 10 s of the clock, so all
	// ten print at once whatever the kubelet's start-up jitter.
	period := int(floodPeriod.Seconds())
	flood := fmt.Sprintf(`    readinessProbe:
      exec: {command: [sh, -c, "sleep $((%d - $(date +%%s) %% %d)); head -c %d /dev/zero; head -c %d /dev/zero >&2"]}
      periodSeconds: %d
      timeoutSeconds: %d
`, period, period, 16<<20, 16<<20, period, 2*period)
	victim := fmt.Sprintf(`    readinessProbe:
      exec: {command: [cat, /etc/hostname]}
      periodSeconds: %d
      timeoutSeconds: 5
    livenessProbe:
      exec: {command: ["true"]}
      periodSeconds: 5
      timeoutSeconds: 5
`, int(victimPeriod.Seconds()))
	if err := k.AddStaticPod("victim", staticPod("victim", "exec sleep 3600", victim)); err != nil {
		t.Fatal(err)
	}
	addStaticPods(t, k, "flood%d", floodPods, flood)
	eventually(t, 3*time.Minute, "every pod running, the victim Ready", func() (bool, string) {
		v, err := podViews(k)
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range v {
			if p.running {
				running++
			}
		}
		return running == floodPods+1 && v["victim"].ready, fmt.Sprintf("%d of %d running, victim %+v", running, floodPods+1, v["victim"])
	})

	pid := proxy.cmd.Process.Pid
	errorsBefore := kubeletRuntimeErrors(t, k)
	probesBefore := kubeletProbeCount(t, k, "victim", "Readiness")
	logFrom := fileSize(t, k.LogPath())
	window := floodWindow(t)
	t.Logf("%s: %d pods flooding 2 × 16 MiB each every %v for %v", mode, floodPods, floodPeriod, window)
	start := time.Now()
	for time.Since(start) < window {
		select {
		case <-proxy.done:
			t.Fatalf("the proxy exited under the flood (%v); OOM kills in its cgroup: %d\n%s", proxy.err, cgroupOOMKills(t, cg), proxy.logTail(20))
		case <-time.After(victimPeriod / 2):
		}
		v, err := podViews(k)
		if err != nil {
			t.Fatalf("the kubelet's pods: %v", err)
		}
		if p := v["victim"]; !p.ready || p.restarts != 0 {
			t.Fatalf("after %v of the flood the victim is ready=%v with %d restarts", time.Since(start).Round(time.Second), p.ready, p.restarts)
		}
	}
	elapsed := time.Since(start)

	if n := cgroupOOMKills(t, cg); n != 0 {
		t.Errorf("the OOM killer ended %d processes of the proxy's cgroup", n)
	}
	if proxy.cmd.Process.Pid != pid || proxy.runs != 1 {
		t.Errorf("the proxy was restarted")
	}
	t.Logf("%s: the proxy's peak RSS %d MiB, its cgroup's peak %d MiB (limit %d MiB)", mode,
		peakRSS(t, pid)>>20, cgroupPeak(t, cg)>>20, floodUnitMemory>>20)

	// The kubelet's runtime calls fail only where containerd's would: the
	// tenant's ExecSync (a reply past 16 MiB, refused by containerd's
	// gRPC server as by the proxy).
	for op, n := range kubeletRuntimeErrors(t, k) {
		if d := n - errorsBefore[op]; d > 0 && op != "exec_sync" {
			t.Errorf("kubelet_runtime_operations_errors_total{operation_type=%q} rose by %v under the flood", op, d)
		}
	}
	// Each flood's answer is an error: a reply past 16 MiB (containerd's
	// answer), or, direct, one that waited past its timeout for the
	// output budget. The kubelet logs each failed ExecSync (and retries an
	// errored probe at once, up to three times: the floods still fire
	// together, on the clock's 10 s).
	failed := `"ExecSync cmd from runtime service failed"`
	refused := countLines(t, k.LogPath(), logFrom, regexp.MustCompile(failed+`.*larger than max`))
	starved := countLines(t, k.LogPath(), logFrom, regexp.MustCompile(failed+`.*exec output budget`))
	errored := countLines(t, k.LogPath(), logFrom, regexp.MustCompile(failed))
	if want := floodPods * int(elapsed/floodPeriod) / 2; refused+starved < want {
		t.Errorf("the kubelet logged %d floods refused as too large and %d starved of the budget (%d errors in all), want at least %d: the flood did not run",
			refused, starved, errored, want)
	}
	t.Logf("%s: of the tenant's ExecSync calls, %d refused as too large (containerd's answer), %d waited past their timeout for the output budget, %d failed in all",
		mode, refused, starved, errored)

	// Every victim probe on time: as many runs as periods in the window
	// (one less for where the window cuts them), each a success.
	ran := kubeletProbeCount(t, k, "victim", "Readiness") - probesBefore
	if want := float64(int(elapsed/victimPeriod) - 1); ran < want {
		t.Errorf("the victim's readiness probe ran %v times in %v, want at least %v (one per %v)", ran, elapsed.Round(time.Second), want, victimPeriod)
	}
	if failures, _ := probeFailures(t, k, logFrom); len(failures) > 0 {
		for _, f := range failures {
			if strings.HasPrefix(f, "victim ") {
				t.Errorf("the victim's probe failed: %s", f)
			}
		}
	}
}

// kubeletRuntimeErrors is kubelet_runtime_operations_errors_total by
// operation type.
func kubeletRuntimeErrors(t *testing.T, k *cluster.Kubelet) map[string]float64 {
	t.Helper()
	text, err := kubeletGet(k, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^kubelet_runtime_operations_errors_total\{.*operation_type="([a-z_]+)".*\} (\S+)$`)
	out := map[string]float64{}
	for line := range strings.Lines(text) {
		if m := re.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Fatalf("kubelet metrics: %q", line)
			}
			out[m[1]] += v
		}
	}
	return out
}

// kubeletProbeCount is how many probes of kind the kubelet ran for a
// static pod's container (prober_probe_total on /metrics/probes), any
// result.
func kubeletProbeCount(t *testing.T, k *cluster.Kubelet, pod, kind string) float64 {
	t.Helper()
	text, err := kubeletGet(k, "/metrics/probes")
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "prober_probe_total{") || !strings.Contains(line, `pod="`+pod+"-"+k.NodeName()+`"`) ||
			!strings.Contains(line, `probe_type="`+kind+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("kubelet probe metrics: %q", line)
		}
		n += v
	}
	return n
}

// cgroupPeak is a memory cgroup's (v1) peak usage.
func cgroupPeak(t *testing.T, cg string) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cg, "memory.max_usage_in_bytes"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// countLines counts the lines of a file after offset from that match re.
func countLines(t *testing.T, path string, from int64, re *regexp.Regexp) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(data[from:])) {
		if re.MatchString(line) {
			n++
		}
	}
	return n
}
