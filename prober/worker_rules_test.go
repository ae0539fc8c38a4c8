package prober_test

import (
	"testing"
	"time"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

func TestOneWorkerPerPodContainerAndProbeType(t *testing.T) {
	h := newHarness(t)
	pod := testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort), Readiness: tcpProbe(readyPort)})
	for range 3 { // UpdatePod is idempotent
		h.update(pod)
	}
	h.step(10 * time.Second)
	if got := h.tcp.count(livePort); got != 2 {
		t.Errorf("liveness probes = %d, want 2 (at once and after one period)", got)
	}
	if got := h.tcp.count(readyPort); got != 2 {
		t.Errorf("readiness probes = %d, want 2", got)
	}
}

func TestSeedsOnNewContainerID(t *testing.T) {
	h := newHarness(t)
	delay := withInitialDelay(60) // no probe runs, so the seeds stay
	pod := testPod("c1", probespec.ContainerProbes{
		Liveness: tcpProbe(livePort, delay), Readiness: tcpProbe(readyPort, delay), Startup: tcpProbe(startPort, delay),
	})
	h.update(pod)
	h.wantResult("c1", probespec.Liveness, results.Success)
	h.wantResult("c1", probespec.Readiness, results.Failure)
	h.wantResult("c1", probespec.Startup, results.Unknown)
	seeds := map[probespec.Type]results.Result{}
	for _, c := range h.drainChanges() {
		seeds[c.Type] = c.Result
	}
	want := map[probespec.Type]results.Result{probespec.Liveness: results.Success, probespec.Readiness: results.Failure, probespec.Startup: results.Unknown}
	for typ, r := range want {
		if seeds[typ] != r {
			t.Errorf("%v seed published %v, want %v", typ, seeds[typ], r)
		}
	}
}

func TestFirstProbeRunsAtOnce(t *testing.T) {
	h := newHarness(t)
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)}))
	if got := h.tcp.count(readyPort); got != 1 {
		t.Fatalf("probes before any time passed = %d, want 1", got)
	}
	h.wantResult("c1", probespec.Readiness, results.Success)
}

func TestProbesRunEveryPeriod(t *testing.T) {
	h := newHarness(t)
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withPeriod(3))}))
	h.step(2 * time.Second)
	if got := h.tcp.count(readyPort); got != 1 {
		t.Fatalf("probes after 2s = %d, want 1", got)
	}
	h.step(time.Second)
	if got := h.tcp.count(readyPort); got != 2 {
		t.Fatalf("probes after 3s = %d, want 2", got)
	}
	h.step(9 * time.Second)
	if got := h.tcp.count(readyPort); got != 5 {
		t.Fatalf("probes after 12s = %d, want 5", got)
	}
}

func TestJitterOnlyWhenAgentStartedLessThanAPeriodAgo(t *testing.T) {
	cases := []struct {
		name       string
		agentAge   time.Duration
		wantAtOnce int
		wantAfter3 int
	}{
		{"agent started 5s ago, period 10s: wait 0.4 of a period", 5 * time.Second, 0, 0},
		{"agent started exactly one period ago: no jitter", 10 * time.Second, 1, 1},
		{"agent started 11s ago: no jitter", 11 * time.Second, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, prober.WithAgentStartTime(epoch.Add(-tc.agentAge)),
				prober.WithJitter(func() float64 { return 0.4 }))
			h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)}))
			if got := h.tcp.count(readyPort); got != tc.wantAtOnce {
				t.Fatalf("probes at once = %d, want %d", got, tc.wantAtOnce)
			}
			h.step(3 * time.Second)
			if got := h.tcp.count(readyPort); got != tc.wantAfter3 {
				t.Fatalf("probes after 3s = %d, want %d", got, tc.wantAfter3)
			}
			h.step(time.Second) // 4s = 0.4 × 10s
			if got := h.tcp.count(readyPort); got != 1 {
				t.Fatalf("probes after 4s = %d, want 1", got)
			}
		})
	}
}

func TestInitialDelayCountsWholeSecondsSinceContainerStart(t *testing.T) {
	cases := []struct {
		name      string
		startedAt time.Duration // before now
		wantProbe bool
	}{
		{"4.999s of a 5s delay is 4 whole seconds", 4999 * time.Millisecond, false},
		{"exactly 5s", 5 * time.Second, true},
		{"long ago", time.Hour, true},
		{"just started", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			pod := withContainerID(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withInitialDelay(5))}),
				"c1", epoch.Add(-tc.startedAt))
			h.update(pod)
			if got := h.tcp.count(readyPort) == 1; got != tc.wantProbe {
				t.Fatalf("probed = %v, want %v", got, tc.wantProbe)
			}
			if !tc.wantProbe {
				h.wantResult("c1", probespec.Readiness, results.Failure) // the seed holds during the delay
			}
		})
	}
}

func TestInitialDelayThenProbesOnThePeriodGrid(t *testing.T) {
	h := newHarness(t)
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withInitialDelay(15))}))
	h.step(10 * time.Second)
	if got := h.tcp.count(readyPort); got != 0 {
		t.Fatalf("probes at 10s = %d, want 0 (delay 15s)", got)
	}
	h.step(10 * time.Second)
	if got := h.tcp.count(readyPort); got != 1 {
		t.Fatalf("probes at 20s = %d, want 1", got)
	}
}

func TestNotRunningContainerIsFailureWithoutProbing(t *testing.T) {
	h := newHarness(t)
	pod := testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort), Readiness: tcpProbe(readyPort)})
	h.update(pod)
	h.wantResult("c1", probespec.Readiness, results.Success)
	before := h.tcp.count(livePort) + h.tcp.count(readyPort)
	h.update(withState(pod, node.StateExited))
	h.wantResult("c1", probespec.Readiness, results.Failure)
	h.wantResult("c1", probespec.Liveness, results.Failure)
	h.step(30 * time.Second)
	if got := h.tcp.count(livePort) + h.tcp.count(readyPort); got != before {
		t.Fatalf("probes after exit = %d, want %d (none)", got, before)
	}
	if k := h.killer.calls(); len(k) != 0 {
		t.Fatalf("a container that is not running must not be killed: %v", k)
	}
}

func TestCreatedContainerWaitsUntilItRuns(t *testing.T) {
	h := newHarness(t)
	pod := withState(testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort)}), node.StateCreated)
	h.update(pod)
	if got := h.drainChanges(); len(got) != 0 {
		t.Fatalf("a created container must not be seeded or failed yet: %v", got)
	}
	h.update(withState(pod, node.StateRunning))
	if got := h.tcp.count(livePort); got != 1 {
		t.Fatalf("probes once running = %d, want 1 at once", got)
	}
	for _, c := range h.drainChanges() {
		if c.Result != results.Success {
			t.Fatalf("liveness went through %v; want only the Success seed", c.Result)
		}
	}
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	h := newHarness(t)
	h.tcp.then(startPort, failure, failure)
	pod := testPod("c1", probespec.ContainerProbes{
		Liveness: tcpProbe(livePort), Readiness: tcpProbe(readyPort),
		Startup: tcpProbe(startPort, withThresholds(1, 10)),
	})
	h.update(pod)
	h.step(10 * time.Second)
	if l, r := h.tcp.count(livePort), h.tcp.count(readyPort); l+r != 0 {
		t.Fatalf("liveness/readiness probed %d/%d times before startup succeeded", l, r)
	}
	if st, _ := h.m.Container("c1"); st.Started || st.Ready {
		t.Fatalf("Started/Ready = %v/%v before startup succeeded", st.Started, st.Ready)
	}
	h.step(10 * time.Second) // third startup probe succeeds
	if got := h.tcp.count(readyPort); got != 1 {
		t.Fatalf("readiness probes right after startup success = %d, want 1 (at once)", got)
	}
	h.step(10 * time.Second)
	if got := h.tcp.count(livePort); got < 1 {
		t.Fatal("liveness never probed after startup success")
	}
	if st, _ := h.m.Container("c1"); !st.Started || !st.Ready {
		t.Fatalf("Started/Ready = %v/%v after startup and readiness succeeded", st.Started, st.Ready)
	}
}

func TestStartupStopsProbingAfterSuccess(t *testing.T) {
	h := newHarness(t)
	h.update(testPod("c1", probespec.ContainerProbes{Startup: tcpProbe(startPort)}))
	h.step(time.Minute)
	if got := h.tcp.count(startPort); got != 1 {
		t.Fatalf("startup probes = %d, want 1", got)
	}
	h.wantResult("c1", probespec.Startup, results.Success)
}

func TestNoStartupProbeMeansStartedWhenRunning(t *testing.T) {
	h := newHarness(t)
	pod := testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort, withInitialDelay(60))})
	h.update(pod)
	st, _ := h.m.Container("c1")
	if !st.Started || !st.Ready {
		t.Fatalf("running container without startup/readiness probe: Started/Ready = %v/%v, want true/true", st.Started, st.Ready)
	}
	h.update(withState(pod, node.StateExited))
	if st, _ := h.m.Container("c1"); st.Started || st.Ready {
		t.Fatalf("exited container: Started/Ready = %v/%v, want false/false", st.Started, st.Ready)
	}
}

func TestThresholdsCountConsecutiveIdenticalResults(t *testing.T) {
	F, S, E := results.Failure, results.Success, results.Unknown // E: a run that errors
	cases := []struct {
		name             string
		typ              probespec.Type
		success, failure int32
		runs             []results.Result
		want             []results.Result // published after each run
	}{
		{"failure publishes at the third in a row", probespec.Liveness, 1, 3,
			[]results.Result{F, F, F}, []results.Result{S, S, F}},
		{"a success resets the failure run", probespec.Liveness, 1, 3,
			[]results.Result{F, F, S, F, F, F}, []results.Result{S, S, S, S, S, F}},
		{"success publishes at the second in a row", probespec.Readiness, 2, 3,
			[]results.Result{S, F, S, S}, []results.Result{F, F, F, S}},
		{"failure threshold 1 publishes at once", probespec.Readiness, 2, 1,
			[]results.Result{S, S, F}, []results.Result{F, S, F}},
		{"errored runs neither count nor reset", probespec.Liveness, 1, 2,
			[]results.Result{F, E, F}, []results.Result{S, S, F}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			port := map[probespec.Type]int{probespec.Liveness: livePort, probespec.Readiness: readyPort}[tc.typ]
			for _, r := range tc.runs {
				switch r {
				case F:
					h.tcp.then(port, failure)
				case S:
					h.tcp.then(port, success)
				default:
					h.tcp.then(port, broken, broken, broken)
				}
			}
			p := tcpProbe(port, withThresholds(tc.success, tc.failure))
			cp := probespec.ContainerProbes{Liveness: p}
			if tc.typ == probespec.Readiness {
				cp = probespec.ContainerProbes{Readiness: p}
			}
			h.update(testPod("c1", cp))
			for i, want := range tc.want {
				if i > 0 {
					h.step(10 * time.Second)
				}
				if got := h.result("c1", tc.typ); got != want {
					t.Fatalf("after run %d: published %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

func TestResultsPublishedOnlyOnChange(t *testing.T) {
	h := newHarness(t)
	h.tcp.then(readyPort, success, success, failure, failure, success)
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withThresholds(1, 1))}))
	h.step(40 * time.Second)
	var got []results.Result
	for _, c := range h.drainChanges() {
		got = append(got, c.Result)
	}
	want := []results.Result{results.Failure, results.Success, results.Failure, results.Success}
	if len(got) != len(want) {
		t.Fatalf("changes = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("changes = %v, want %v", got, want)
		}
	}
}

func TestNewPodAddressesWakeTheWorker(t *testing.T) {
	h := newHarness(t)
	pod := testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withPeriod(60))})
	pod.IPs = nil
	h.update(pod)
	h.wantResult("c1", probespec.Readiness, results.Failure) // the initial "not ready"
	if tg := h.tcp.seenTargets(); len(tg) != 0 {
		t.Fatalf("targets = %+v without a pod IP, want nothing dialed (\":port\" is the node)", tg)
	}
	pod.IPs = []string{"10.0.0.9"}
	h.update(pod)
	h.wantResult("c1", probespec.Readiness, results.Success) // at once, not 60 s later
	if tg := h.tcp.seenTargets(); len(tg) != 1 || tg[0].Host != "10.0.0.9" {
		t.Fatalf("targets = %+v, want the new pod address", tg)
	}
	if last := h.tcp.targets[len(h.tcp.targets)-1]; last.Host != "10.0.0.9" || !last.InPod {
		t.Fatalf("probed %+v, want the new pod IP", last)
	}
}

func TestJitterOutsideItsRangeIsIgnored(t *testing.T) {
	h := newHarness(t, prober.WithAgentStartTime(epoch), prober.WithJitter(func() float64 { return 7 }))
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)}))
	if got := h.tcp.count(readyPort); got != 1 {
		t.Fatalf("probes = %d, want 1 at once", got)
	}
}

func TestInitialDelayWithUnknownStartTimeCountsFromWhenTheAgentSawItRun(t *testing.T) {
	// NRI reports 0 for an unknown start time. The whole-second count must
	// not overflow (it froze probing for good), and the delay must still be
	// kept, counted from when the engine first saw the container run.
	cases := []struct {
		name      string
		delay     int32
		wantAtNow int
		wantAt10s int
	}{
		{"no delay probes at once", 0, 1, 2},
		{"a 5s delay is kept", 5, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			pod := withContainerID(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withInitialDelay(tc.delay))}),
				"c1", time.Time{})
			h.update(pod)
			if got := h.tcp.count(readyPort); got != tc.wantAtNow {
				t.Fatalf("probes at once = %d, want %d", got, tc.wantAtNow)
			}
			h.step(10 * time.Second)
			if got := h.tcp.count(readyPort); got != tc.wantAt10s {
				t.Fatalf("probes after 10s = %d, want %d", got, tc.wantAt10s)
			}
		})
	}
}
