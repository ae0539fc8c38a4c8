package prober_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

func TestOnHoldAfterLivenessFailureUntilNewContainerID(t *testing.T) {
	h := newHarness(t)
	h.tcp.always(livePort, failure)
	pod := testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort, withThresholds(1, 2))})
	h.update(pod)
	h.step(10 * time.Second)
	h.wantResult("c1", probespec.Liveness, results.Failure)
	st, _ := h.m.Container("c1")
	if ps := st.Probes[probespec.Liveness]; !ps.OnHold || ps.Consecutive != 0 {
		t.Fatalf("after failure at threshold: OnHold=%v Consecutive=%d, want true, 0", ps.OnHold, ps.Consecutive)
	}
	h.step(time.Minute)
	if got := h.tcp.count(livePort); got != 2 {
		t.Fatalf("probes while on hold: total %d, want 2", got)
	}
	h.tcp.always(livePort, success)
	h.update(withContainerID(pod, "c2", h.clock.Now()))
	if got := h.tcp.count(livePort); got != 3 {
		t.Fatalf("probes after the new container = %d, want 3 (probing resumed at once)", got)
	}
	h.wantResult("c2", probespec.Liveness, results.Success)
	if st, _ := h.m.Container("c2"); st.Probes[probespec.Liveness].OnHold {
		t.Fatal("still on hold with a new container ID")
	}
}

func TestOnHoldAfterStartupResultAtThreshold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer answer
		want   results.Result
	}{
		{"success", success, results.Success},
		{"failure", failure, results.Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.tcp.always(startPort, tc.answer)
			pod := testPod("c1", probespec.ContainerProbes{Startup: tcpProbe(startPort, withThresholds(1, 1))})
			h.update(pod)
			h.step(time.Minute)
			if got := h.tcp.count(startPort); got != 1 {
				t.Fatalf("startup probes = %d, want 1 (on hold after its result)", got)
			}
			h.wantResult("c1", probespec.Startup, tc.want)
			h.update(withContainerID(pod, "c2", h.clock.Now()))
			if got := h.tcp.count(startPort); got != 2 {
				t.Fatalf("startup probes after new container = %d, want 2", got)
			}
		})
	}
}

func TestRunCarriesOverANewContainerLikeTheKubelet(t *testing.T) {
	// The kubelet keeps lastResult/resultRun when it follows a new
	// container (only a hold resets the run); so do we.
	h := newHarness(t)
	h.tcp.then(livePort, failure, failure, failure)
	pod := testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort)})
	h.update(pod)
	h.step(10 * time.Second) // two failures, below threshold 3
	h.update(withContainerID(pod, "c2", h.clock.Now()))
	h.wantResult("c2", probespec.Liveness, results.Failure)
}

func TestNewContainerDoesNotShowTheOldContainersLastRun(t *testing.T) {
	h := newHarness(t)
	h.tcp.always(livePort, failure)
	pod := testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort)})
	h.update(pod)
	h.step(10 * time.Second)
	if st, _ := h.m.Container("c1"); st.Probes[probespec.Liveness].LastOutput != failure.out {
		t.Fatalf("c1 last output = %q, want %q", st.Probes[probespec.Liveness].LastOutput, failure.out)
	}
	// The new container is not running yet: nothing is probed for it.
	h.update(withState(withContainerID(pod, "c2", h.clock.Now()), node.StateExited))
	st, _ := h.m.Container("c2")
	ps := st.Probes[probespec.Liveness]
	if ps.LastOutput != "" || !ps.LastProbeTime.IsZero() || ps.Method != "" {
		t.Fatalf("c2 shows the old run: output %q, time %v, method %q", ps.LastOutput, ps.LastProbeTime, ps.Method)
	}
	if len(ps.History) == 0 {
		t.Fatal("history of the old container dropped, want it kept")
	}
}

func TestPodDeletionSetsLivenessAndStartupSuccessAndStopsThem(t *testing.T) {
	h := newHarness(t)
	h.tcp.always(startPort, failure)
	pod := testPod("c1", probespec.ContainerProbes{
		Liveness: tcpProbe(livePort), Readiness: tcpProbe(readyPort), Startup: tcpProbe(startPort, withThresholds(1, 30)),
	})
	h.update(pod)
	h.drainChanges()
	pod.Deleting = true
	h.update(pod)
	got := map[probespec.Type]results.Result{}
	for _, c := range h.drainChanges() {
		got[c.Type] = c.Result
	}
	if got[probespec.Startup] != results.Success {
		t.Fatalf("startup change on deletion = %v, want Success", got[probespec.Startup])
	}
	st, _ := h.m.Container("c1")
	if _, ok := st.Probes[probespec.Startup]; ok {
		t.Fatal("startup worker still present after deletion")
	}
	if _, ok := st.Probes[probespec.Liveness]; ok {
		t.Fatal("liveness worker still present after deletion")
	}
	before := h.tcp.count(startPort) + h.tcp.count(livePort)
	for range 3 {
		h.update(pod) // must not recreate them
	}
	h.step(time.Minute)
	if after := h.tcp.count(startPort) + h.tcp.count(livePort); after != before {
		t.Fatalf("liveness/startup probed %d times after deletion", after-before)
	}
}

func TestPodDeletionReadinessKeepsProbing(t *testing.T) {
	h := newHarness(t)
	pod := testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)})
	pod.Deleting = true
	h.update(pod)
	h.tcp.always(readyPort, failure)
	h.step(30 * time.Second)
	if got := h.tcp.count(readyPort); got != 4 {
		t.Fatalf("readiness probes while deleting = %d, want 4", got)
	}
	h.wantResult("c1", probespec.Readiness, results.Failure)
}

func TestNewContainerIDRemovesOldResultAndReseeds(t *testing.T) {
	h := newHarness(t)
	pod := testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withInitialDelay(5))})
	h.update(pod)
	h.step(10 * time.Second)
	h.wantResult("c1", probespec.Readiness, results.Success)
	h.drainChanges()
	h.update(withContainerID(pod, "c2", h.clock.Now()))
	if _, ok := h.m.Container("c1"); ok {
		t.Fatal("old container still reported")
	}
	h.wantResult("c2", probespec.Readiness, results.Failure) // re-seeded, initial delay again
	ch := h.drainChanges()
	if len(ch) != 1 || ch[0].ContainerID != "c2" || ch[0].Result != results.Failure {
		t.Fatalf("changes = %+v, want the c2 Failure seed", ch)
	}
}

func TestStateChangeWakesWorkerAtOnce(t *testing.T) {
	h := newHarness(t)
	pod := testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withPeriod(60))})
	h.update(pod)
	h.step(5 * time.Second)
	h.update(withState(pod, node.StateExited))
	h.wantResult("c1", probespec.Readiness, results.Failure) // without waiting 55 s
}

func TestStopIsIdempotentAndRemovesResults(t *testing.T) {
	h := newHarness(t)
	pod := testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort), Readiness: tcpProbe(readyPort)})
	h.update(pod)
	if n := h.series("prober_probe_total"); n == 0 {
		t.Fatal("no prober_probe_total series while probing")
	}
	h.m.RemovePod(pod.UID)
	h.m.RemovePod(pod.UID)
	h.settle()
	if _, ok := h.m.Container("c1"); ok {
		t.Fatal("removed pod's container still reported")
	}
	if got := h.m.Containers(); len(got) != 0 {
		t.Fatalf("Containers after RemovePod = %d entries", len(got))
	}
	for _, name := range []string{"prober_probe_total", "prober_probe_duration_seconds"} {
		if n := h.series(name); n != 0 {
			t.Fatalf("%s keeps %d series after the pod went", name, n)
		}
	}
	before := h.tcp.count(livePort)
	h.step(time.Minute)
	if h.tcp.count(livePort) != before {
		t.Fatal("removed pod still probed")
	}
}

// A probe leaves the spec only when the pod spec, once known, rejects its
// container (the annotation is fixed at creation): its workers stop.
func TestWorkerStopsWhenContainerOrProbeVanishes(t *testing.T) {
	h := newHarness(t)
	pod := testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort), Readiness: tcpProbe(readyPort)})
	h.update(pod)
	rejected := pod
	rejected.API = &node.APIPod{Spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "other"}}}}
	h.update(rejected)
	st, _ := h.m.Container("c1")
	if len(st.Probes) != 0 || st.SpecError == "" {
		t.Fatalf("status after the pod spec rejected the container = %+v, want no workers and a spec error", st)
	}
	noContainer := rejected
	noContainer.Containers = nil
	h.update(noContainer)
	if got := h.m.Containers(); len(got) != 0 {
		t.Fatalf("containers after the container vanished: %+v", got)
	}
	l, r := h.tcp.count(livePort), h.tcp.count(readyPort)
	h.step(time.Minute)
	if h.tcp.count(livePort) != l || h.tcp.count(readyPort) != r {
		t.Fatal("stopped workers still probe")
	}
}

// The kubelet keeps a pod's probes for its life: a snapshot with another
// annotation (the runtime never reports one) changes no worker.
func TestChangedAnnotationKeepsTheWorker(t *testing.T) {
	h := newHarness(t)
	pod := testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withPeriod(60))})
	h.update(pod)
	faster := pod
	faster.Annotations = annotate(probespec.PodProbes{"app": {Readiness: tcpProbe(readyPort, withPeriod(5))}})
	h.update(faster)
	h.step(10 * time.Second)
	if got := h.tcp.count(readyPort); got != 1 {
		t.Fatalf("probes = %d, want 1 (the first probe; the next one 60 s later)", got)
	}
}

func TestSeedSkippedForContainerRunningBeforeAgentRestart(t *testing.T) {
	h := newHarness(t, prober.WithAgentStartTime(epoch))
	pod := withContainerID(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withInitialDelay(7200))}),
		"c1", epoch.Add(-time.Hour))
	h.update(pod)
	if ch := h.drainChanges(); len(ch) != 0 {
		t.Fatalf("a container running before the agent restarted was seeded: %+v", ch)
	}
	fresh := withContainerID(pod, "c2", epoch)
	h.update(fresh)
	h.wantResult("c2", probespec.Readiness, results.Failure)
}

// CRI-O's NRI tells no start time; the lifecycle cache reads it from CRI
// a moment later. The seed waits for it, so a container that ran across
// the agent's restart is not flipped to the seed, and a new one is seeded
// as soon as its time is known (or restartGrace later, never told).
func TestSeedWaitsForAnUnknownStartTime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		started time.Time // the start time told later; zero: never
		wait    time.Duration
		want    []results.Result
	}{
		{name: "predates the agent", started: epoch.Add(-time.Hour), want: nil},
		{name: "new", started: epoch, want: []results.Result{results.Failure}},
		{name: "never told", wait: 11 * time.Second, want: []results.Result{results.Failure}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, prober.WithAgentStartTime(epoch))
			pod := withContainerID(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withInitialDelay(7200), withPeriod(1))}),
				"c1", time.Time{})
			h.update(pod)
			h.step(time.Second) // the worker's first tick, after its jitter
			if ch := h.drainChanges(); len(ch) != 0 {
				t.Fatalf("seeded before the start time was known: %+v", ch)
			}
			if !tc.started.IsZero() {
				h.update(withContainerID(pod, "c1", tc.started))
			}
			h.step(tc.wait)
			var got []results.Result
			for _, ch := range h.drainChanges() {
				got = append(got, ch.Result)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("published %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWarningIsSuccessWithProbeWarningEvent(t *testing.T) {
	h := newHarness(t)
	h.tcp.then(readyPort, warning)
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)}))
	h.wantResult("c1", probespec.Readiness, results.Success)
	ev := h.drainEvents()
	if len(ev) != 1 || ev[0].Reason != "ProbeWarning" || ev[0].Type != "Warning" ||
		ev[0].Message != "Readiness probe warning: Probe terminated redirects" {
		t.Fatalf("events = %+v, want one ProbeWarning", ev)
	}
}

func TestFailureEmitsUnhealthyEvent(t *testing.T) {
	h := newHarness(t)
	h.tcp.then(readyPort, failure)
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)}))
	ev := h.drainEvents()
	want := prober.Event{
		Time: epoch, Type: "Warning", Reason: "Unhealthy", Message: "Readiness probe failed: connection refused",
		PodUID: "uid-1", PodName: "web", PodNamespace: "default", ContainerName: "app", ContainerID: "c1", ProbeType: probespec.Readiness,
	}
	if len(ev) != 1 || ev[0] != want {
		t.Fatalf("events = %+v, want %+v", ev, want)
	}
}

func TestErrorRetriedThreeTimesThenDiscarded(t *testing.T) {
	h := newHarness(t)
	h.tcp.always(readyPort, broken)
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withThresholds(1, 1))}))
	if got := h.tcp.count(readyPort); got != 3 {
		t.Fatalf("attempts in one run = %d, want 3", got)
	}
	st, _ := h.m.Container("c1")
	ps := st.Probes[probespec.Readiness]
	if ps.Consecutive != 0 {
		t.Fatalf("errored run counted: Consecutive = %d", ps.Consecutive)
	}
	if len(ps.History) != 1 || ps.History[0].Result != results.Unknown || ps.History[0].Error == "" {
		t.Fatalf("history = %+v, want one Unknown record with the error", ps.History)
	}
	ev := h.drainEvents()
	// The kubelet's "%s probe errored and resulted in %s state: %s".
	if len(ev) != 1 || ev[0].Reason != "Unhealthy" || ev[0].Type != "Warning" ||
		ev[0].Message != "Readiness probe errored and resulted in unknown state: "+errBroken.Error() {
		t.Fatalf("events = %+v, want one 'Readiness probe errored' event", ev)
	}
	// Like the kubelet, a discarded run is not in prober_probe_total;
	// probelet counts it on its own series.
	for _, r := range []string{"unknown", "failed", "successful"} {
		if got := h.counter(probespec.Readiness, r, "app"); got != -1 {
			t.Fatalf("prober_probe_total{result=%s} = %v, want no series", r, got)
		}
	}
	if got := h.erroredTotal(probespec.Readiness); got != 1 {
		t.Fatalf("probelet_probe_errors_total = %v, want 1", got)
	}
}

func TestErrorThenSuccessWithinRetriesCounts(t *testing.T) {
	h := newHarness(t)
	h.tcp.then(readyPort, broken, broken, success)
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)}))
	h.wantResult("c1", probespec.Readiness, results.Success)
	if got := h.tcp.count(readyPort); got != 3 {
		t.Fatalf("attempts = %d, want 3", got)
	}
	if ev := h.drainEvents(); len(ev) != 0 {
		t.Fatalf("a run that succeeded on retry emitted %+v", ev)
	}
}

func TestPodDeletionStopsLivenessAndStartupEvenOnHoldOrNotRunning(t *testing.T) {
	// The kubelet's StopLivenessAndStartup stops these workers (and drops
	// their results) whatever state they are in; only a running, probing
	// worker publishes Success first.
	cases := []struct {
		name  string
		setup func(h *harness, pod node.Pod) node.Pod
	}{
		{"liveness on hold after a failure", func(h *harness, pod node.Pod) node.Pod {
			h.tcp.always(livePort, failure)
			h.update(pod)
			h.step(20 * time.Second)
			return pod
		}},
		{"container exited", func(h *harness, pod node.Pod) node.Pod {
			h.update(pod)
			pod = withState(pod, node.StateExited)
			h.update(pod)
			return pod
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			pod := testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort), Readiness: tcpProbe(readyPort)})
			pod = tc.setup(h, pod)
			h.drainChanges()
			pod.Deleting = true
			h.update(pod)
			st, _ := h.m.Container("c1")
			if _, ok := st.Probes[probespec.Liveness]; ok {
				t.Fatalf("liveness worker kept after deletion: %+v", st.Probes[probespec.Liveness])
			}
			if _, ok := st.Probes[probespec.Readiness]; !ok {
				t.Fatal("readiness worker stopped by deletion")
			}
			for _, c := range h.drainChanges() {
				if c.Type == probespec.Liveness {
					t.Fatalf("liveness published %v on deletion; nothing probed it", c.Result)
				}
			}
		})
	}
}
