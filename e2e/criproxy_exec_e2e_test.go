//go:build e2e

package e2e_test

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
)

// execProbeKind is one kind of static pod of
// TestCRIProxyDirectExecMatchesContainerd: its exec probes, how many pods
// of it, whether its liveness probe fails (the kubelet restarts it), and
// whether its probes time out by design (their timeouts are compared).
type execProbeKind struct {
	name, probes string
	pods         int
	crashLoops   bool
	timesOut     bool
}

// execProbeKinds: exec liveness and readiness probes that pass, fail, time
// out and print; and two hostile ones beside them, a probe whose command
// writes more than the kubelet accepts (containerd's 16 MiB cap, then the
// kubelet's own 16 MiB message limit) and one that leaves a process
// holding its output open (containerd waits for it until the kubelet's
// deadline, the timeout plus 2 minutes, the helper as long: neither answers
// within the test).
var execProbeKinds = []execProbeKind{
	{name: "ok", pods: 4, probes: `    livenessProbe:
      exec: {command: ["true"]}
      periodSeconds: 5
      timeoutSeconds: 3
    readinessProbe:
      exec: {command: [cat, /etc/hostname]}
      periodSeconds: 5
      timeoutSeconds: 3
`},
	{name: "unready", pods: 4, probes: `    readinessProbe:
      exec: {command: [sh, -c, "echo not ready yet; echo on stderr >&2; exit 1"]}
      periodSeconds: 5
      timeoutSeconds: 3
`},
	{name: "dead", pods: 4, crashLoops: true, probes: `    livenessProbe:
      exec: {command: [sh, -c, "echo dead >&2; exit 3"]}
      periodSeconds: 2
      timeoutSeconds: 3
      failureThreshold: 1
`},
	{name: "slow", pods: 4, timesOut: true, probes: `    readinessProbe:
      exec: {command: [sleep, "5"]}
      periodSeconds: 3
      timeoutSeconds: 1
`},
	{name: "loud", pods: 4, probes: `    readinessProbe:
      exec: {command: [sh, -c, "head -c 20000 /dev/zero | tr '\\0' x; exit 0"]}
      periodSeconds: 5
      timeoutSeconds: 3
`},
	{name: "flood", pods: 1, probes: `    readinessProbe:
      exec: {command: [sh, -c, "head -c 17000000 /dev/zero"]}
      periodSeconds: 5
      timeoutSeconds: 10
`},
	{name: "linger", pods: 1, timesOut: true, probes: `    readinessProbe:
      exec: {command: [sh, -c, "sleep 600 & echo started"]}
      periodSeconds: 5
      timeoutSeconds: 3
`},
}

// kindOf is the kind of a static pod named after it ("ok2" is "ok").
func kindOf(pod string) execProbeKind {
	name := strings.TrimRight(pod, "0123456789")
	for _, k := range execProbeKinds {
		if k.name == name {
			return k
		}
	}
	return execProbeKind{name: name}
}

// TestCRIProxyDirectExecMatchesContainerd: the kubelet's own exec probes,
// through the CRI proxy with --exec-mode direct, give the kubelet what
// they give it through containerd. Two beds, two standalone kubelets with
// the same 22 static pods (20 with passing, failing, timing-out and loud
// exec probes, two hostile ones: a 17 MB flood and a lingering process):
// one kubelet on containerd, the other through the proxy. After the same
// time, every pod has the same readiness and the same restarts (none, or
// some for the failing liveness probes), and the kubelet logged the same
// failures with the same output (what its Unhealthy Events say); the
// victims beside the hostile pods are Ready and never restarted, the proxy
// stayed within its unit's memory ceiling, and every ExecSync of the
// proxied kubelet was run by the direct executor but for containers gone.
func TestCRIProxyDirectExecMatchesContainerd(t *testing.T) {
	plainBed, directBed := testbed.Start(t), testbed.Start(t)
	proxy := startCRIProxy(t, directBed, "--exec-mode", "direct", "--log-level", "debug")
	endpoint := proxyEndpoint(directBed)
	kubelets := map[string]*cluster.Kubelet{
		"containerd": cluster.StartStandaloneKubelet(t, plainBed, cluster.WithNodeName("plain"), cluster.WithKubeletArgs("--v=1")),
		"direct": cluster.StartStandaloneKubelet(t, directBed, cluster.WithNodeName("direct"),
			cluster.WithCRIEndpoint(endpoint), cluster.WithImageEndpoint(endpoint), cluster.WithKubeletArgs("--v=1")),
	}
	for _, k := range kubelets {
		for _, kind := range execProbeKinds {
			for i := range kind.pods {
				name := fmt.Sprintf("%s%d", kind.name, i)
				if err := k.AddStaticPod(name, staticPod(name, "exec sleep 3600", kind.probes)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// Both kubelets run every pod and have restarted every failing one.
	pods := 0
	for _, kind := range execProbeKinds {
		pods += kind.pods
	}
	views := map[string]map[string]podView{}
	for via, k := range kubelets {
		eventually(t, 3*time.Minute, via+": every pod started, the dead ones restarted", func() (bool, string) {
			v, err := podViews(k)
			if err != nil {
				return false, err.Error()
			}
			views[via] = v
			done := 0
			for name, p := range v {
				// A crash-looping container runs a second or two between
				// back-offs of up to minutes: its restart says it started.
				if kindOf(name).crashLoops && p.restarts > 0 || !kindOf(name).crashLoops && p.running {
					done++
				}
			}
			return done == pods, fmt.Sprintf("%d of %d", done, pods)
		})
	}
	// The start storm (44 containers started at once on two cores) may
	// time out a probe of either kubelet: what they logged until now is
	// not compared. Readiness settles within three periods of the slowest
	// probe (5 s); both kubelets are asked once it has.
	logFrom := map[string]int64{}
	started := map[string]map[string]podView{}
	for via, k := range kubelets {
		logFrom[via] = fileSize(t, k.LogPath())
		started[via] = views[via]
	}
	time.Sleep(3 * 5 * time.Second)
	for via, k := range kubelets {
		v, err := podViews(k)
		if err != nil {
			t.Fatal(err)
		}
		views[via] = v
	}
	for name, want := range views["containerd"] {
		got := views["direct"][name]
		t.Logf("%s: through containerd ready=%v restarts=%d; direct ready=%v restarts=%d", name, want.ready, want.restarts, got.ready, got.restarts)
		// A crash-looping container is Ready while it runs and not while
		// it waits out its back-off: where each kubelet is in that cycle
		// is timing, not probe semantics.
		// Restarts count from the end of the start storm, but for the
		// crash-looping kind, which restarts from its start.
		kind := kindOf(name)
		wantRestarts, gotRestarts := want.restarts, got.restarts
		if !kind.crashLoops {
			wantRestarts -= started["containerd"][name].restarts
			gotRestarts -= started["direct"][name].restarts
		}
		if (got.ready != want.ready && !kind.crashLoops) || (gotRestarts > 0) != (wantRestarts > 0) {
			t.Errorf("%s: through containerd ready=%v restarted=%v, through the proxy ready=%v restarted=%v",
				name, want.ready, wantRestarts > 0, got.ready, gotRestarts > 0)
		}
		if kind.name == "ok" && (!got.ready || gotRestarts != 0) {
			t.Errorf("%s, a victim beside the hostile pods: ready=%v, %d restarts through the proxy", name, got.ready, gotRestarts)
		}
	}
	// The flood's 17 MB pass through the proxy every period; it must stay
	// far below its unit's MemoryMax (256M, deploy/systemd).
	if peak := peakRSS(t, proxy.cmd.Process.Pid); peak > 192<<20 {
		t.Errorf("the proxy's peak RSS %d MiB: the flood pushes it towards its unit's 256 MiB ceiling", peak>>20)
	} else {
		t.Logf("the proxy's peak RSS: %d MiB", peak>>20)
	}
	failures := map[string][]string{}
	for via, k := range kubelets {
		var timeouts int
		failures[via], timeouts = probeFailures(t, k, logFrom[via])
		t.Logf("%s: %d timeouts of fast commands under load, not compared", via, timeouts)
	}
	if !slices.Equal(failures["containerd"], failures["direct"]) {
		t.Errorf("the kubelets logged different probe failures:\nthrough containerd %q\nthrough the proxy  %q", failures["containerd"], failures["direct"])
	}
	t.Logf("probe failures, the same through both: %q", failures["direct"])
	for _, want := range []string{"dead Liveness: dead\n", "unready Readiness: not ready yet\non stderr\n",
		`slow Readiness: command timed out: "sleep 5" timed out after 1s`} {
		if !slices.Contains(failures["direct"], want) {
			t.Errorf("no failure %q through the proxy", want)
		}
	}

	// Every call is the executor's but for a container gone under a
	// probe (a crash-looping one killed meanwhile), which containerd must
	// answer: its bundle or init already gone, or the helper finding it
	// so before the command started.
	direct := proxy.sumWhere("probelet_cri_proxy_calls_total", map[string]string{"method": "ExecSync", "served": "direct"})
	forwarded := proxy.sumWhere("probelet_cri_proxy_calls_total", map[string]string{"method": "ExecSync", "served": "runtime"})
	fallbacks := proxy.sumWhere("probelet_exec_direct_fallbacks_total", nil)
	gone := proxy.sumWhere("probelet_exec_direct_fallbacks_total", map[string]string{"reason": "bundle"}) +
		proxy.sumWhere("probelet_exec_direct_fallbacks_total", map[string]string{"reason": "identity"})
	var restarts int32
	for _, v := range views["direct"] {
		restarts += v.restarts
	}
	t.Logf("the proxy's ExecSync calls: %v run directly, %v forwarded to containerd; direct executor fallbacks %v (%v for containers gone); %d restarts",
		direct, forwarded, fallbacks, gone, restarts)
	if direct == 0 || fallbacks != gone || forwarded > gone+float64(restarts) {
		t.Errorf("ExecSync: %v direct, %v forwarded, %v fallbacks (%v for containers gone), %d restarts: want every call direct but for containers gone",
			direct, forwarded, fallbacks, gone, restarts)
	}
}

type podView struct {
	running  bool
	ready    bool
	restarts int32
}

// podViews is each static pod of k, by its name without the node suffix.
func podViews(k *cluster.Kubelet) (map[string]podView, error) {
	pods, err := kubeletPods(k)
	if err != nil {
		return nil, err
	}
	out := map[string]podView{}
	for i := range pods {
		p := &pods[i]
		name := strings.TrimSuffix(p.Name, "-"+k.NodeName())
		v := podView{ready: podReady(p)}
		for _, s := range p.Status.ContainerStatuses {
			v.running = s.State.Running != nil
			v.restarts = s.RestartCount
		}
		out[name] = v
	}
	return out, nil
}

// probeFailures are the distinct probe failures the kubelet logged from
// offset from on: pod kind, probe type and output, as its Unhealthy Events
// carry them; and how many were timeouts of a command that does not
// sleep (the machine's load, not the probe's semantics), left out.
func probeFailures(t *testing.T, k *cluster.Kubelet, from int64) ([]string, int) {
	t.Helper()
	data, err := os.ReadFile(k.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data[from:]), "\n")
	head := regexp.MustCompile(`"Probe failed" probeType="(\w+)" pod="default/([a-z]+)\d+-` + regexp.QuoteMeta(k.NodeName()) + `".* output=(.*)$`)
	seen := map[string]bool{}
	timeouts := 0
	for i := 0; i < len(lines); i++ {
		m := head.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		var output string
		if m[3] == "<" {
			// klog's multi-line value: tab-indented lines, then " >".
			for i++; i < len(lines) && lines[i] != " >"; i++ {
				output += strings.TrimPrefix(lines[i], "\t") + "\n"
			}
		} else if output, err = strconv.Unquote(m[3]); err != nil {
			t.Fatalf("kubelet log: output %s: %v", m[3], err)
		}
		if strings.HasPrefix(output, "command timed out") && !kindOf(m[2]).timesOut {
			timeouts++
			continue
		}
		seen[m[2]+" "+m[1]+": "+output] = true
	}
	return slices.Sorted(maps.Keys(seen)), timeouts
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kib int64
			if _, err := fmt.Sscan(v, &kib); err != nil {
				t.Fatal(err)
			}
			return kib << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
