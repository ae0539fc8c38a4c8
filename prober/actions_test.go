package prober_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// failingLiveness is a liveness probe that fails at its first run.
func failingLiveness(h *harness, mutate ...func(*corev1.Probe)) *corev1.Probe {
	h.tcp.always(livePort, failure)
	return tcpProbe(livePort, append([]func(*corev1.Probe){withThresholds(1, 1)}, mutate...)...)
}

func TestLivenessFailureKillsWithTheKubeletsGracePeriod(t *testing.T) {
	cases := []struct {
		name        string
		probeGrace  *int64
		podGrace    *int64
		annotations map[string]string
		want        time.Duration
	}{
		{"probe terminationGracePeriodSeconds wins", ptr.To[int64](5), ptr.To[int64](60), nil, 5 * time.Second},
		{"else the pod's", nil, ptr.To[int64](60), map[string]string{probespec.AnnotationPodTerminationGracePeriod: "90"}, 60 * time.Second},
		{"else the pod's from the container annotation", nil, nil, map[string]string{probespec.AnnotationPodTerminationGracePeriod: "90"}, 90 * time.Second},
		{"else 30 s", nil, nil, nil, 30 * time.Second},
		{"an unreadable annotation falls back to 30 s", nil, nil, map[string]string{probespec.AnnotationPodTerminationGracePeriod: "soon"}, 30 * time.Second},
		{"never below 2 s (probe)", ptr.To[int64](1), nil, nil, 2 * time.Second},
		{"never below 2 s (pod 0)", nil, ptr.To[int64](0), nil, 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			p := failingLiveness(h, func(p *corev1.Probe) { p.TerminationGracePeriodSeconds = tc.probeGrace })
			pod := testPod("c1", probespec.ContainerProbes{Liveness: p})
			pod.TerminationGracePeriodSeconds = tc.podGrace
			pod.Containers[0].Annotations = tc.annotations
			h.update(pod)
			kills := h.killer.calls()
			want := kill{id: "c1", grace: tc.want, reason: "Container app failed liveness probe, will be restarted"}
			if len(kills) != 1 || kills[0] != want {
				t.Fatalf("kills = %+v, want [%+v]", kills, want)
			}
		})
	}
}

func TestKillIsRecordedAsRestartAndKillingEvent(t *testing.T) {
	h := newHarness(t)
	h.update(testPod("c1", probespec.ContainerProbes{Liveness: failingLiveness(h)}))
	st, _ := h.m.Container("c1")
	want := prober.Restart{
		Time: epoch, ContainerID: "c1", ProbeType: probespec.Liveness, GracePeriod: 30 * time.Second,
		Message: "Container app failed liveness probe, will be restarted",
	}
	if len(st.Restarts) != 1 || st.Restarts[0] != want {
		t.Fatalf("restarts = %+v, want [%+v]", st.Restarts, want)
	}
	var killing []prober.Event
	for _, e := range h.drainEvents() {
		if e.Reason == "Killing" {
			killing = append(killing, e)
		}
	}
	if len(killing) != 1 || killing[0].Type != "Normal" || killing[0].Message != want.Message {
		t.Fatalf("Killing events = %+v", killing)
	}
}

func TestStartupFailureKills(t *testing.T) {
	h := newHarness(t)
	h.tcp.always(startPort, failure)
	h.update(testPod("c1", probespec.ContainerProbes{Startup: tcpProbe(startPort, withThresholds(1, 2))}))
	h.step(10 * time.Second)
	kills := h.killer.calls()
	if len(kills) != 1 || kills[0].reason != "Container app failed startup probe, will be restarted" {
		t.Fatalf("kills = %+v", kills)
	}
}

func TestReadinessFailureNeverKills(t *testing.T) {
	h := newHarness(t)
	h.tcp.always(readyPort, failure)
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withThresholds(1, 1))}))
	h.step(time.Minute)
	if k := h.killer.calls(); len(k) != 0 {
		t.Fatalf("readiness failure killed: %+v", k)
	}
}

func TestLivenessFailureBelowThresholdDoesNotKill(t *testing.T) {
	h := newHarness(t)
	h.tcp.then(livePort, failure, failure, success, failure, failure)
	h.update(testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort)}))
	h.step(40 * time.Second)
	if k := h.killer.calls(); len(k) != 0 {
		t.Fatalf("killed below threshold: %+v", k)
	}
}

func TestReportModeReportsWithoutKilling(t *testing.T) {
	h := newHarness(t, prober.WithLivenessAction(prober.ActionReport))
	h.update(testPod("c1", probespec.ContainerProbes{Liveness: failingLiveness(h)}))
	if k := h.killer.calls(); len(k) != 0 {
		t.Fatalf("report mode killed: %+v", k)
	}
	var would []prober.Event
	for _, e := range h.drainEvents() {
		if e.Reason == "WouldRestart" {
			would = append(would, e)
		}
	}
	if len(would) != 1 || !strings.Contains(would[0].Message, "would be restarted") {
		t.Fatalf("WouldRestart events = %+v", would)
	}
	if st, _ := h.m.Container("c1"); len(st.Restarts) != 0 {
		t.Fatalf("report mode recorded restarts: %+v", st.Restarts)
	}
}

func TestSlowKillDoesNotBlockProbing(t *testing.T) {
	h := newHarness(t)
	h.killer.gate = make(chan struct{})
	pod := testPod("c1", probespec.ContainerProbes{Liveness: failingLiveness(h)})
	other := testPod("d1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)})
	other.UID, other.Name = "uid-2", "other"
	h.m.UpdatePod(pod)
	h.m.UpdatePod(other)
	awaitProbe(t, h.tcp, readyPort)
	// The kill hangs; the other pod's probes still run on time.
	for range 3 {
		h.clock.Step(10 * time.Second)
		awaitProbe(t, h.tcp, readyPort)
	}
	if got := h.tcp.count(readyPort); got != 4 {
		t.Fatalf("readiness probes during a hung kill = %d, want 4", got)
	}
	close(h.killer.gate)
	h.settle()
}

// awaitProbe waits until a probe on port has been called.
func awaitProbe(t *testing.T, f *fakeTCP, port int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case p := <-f.seen:
			if p == port {
				return
			}
		case <-timeout:
			t.Fatalf("no probe on port %d", port)
		}
	}
}

func TestKillErrorIsRecorded(t *testing.T) {
	h := newHarness(t)
	h.killer.err = errors.New("runtime unavailable")
	h.update(testPod("c1", probespec.ContainerProbes{Liveness: failingLiveness(h)}))
	st, _ := h.m.Container("c1")
	if len(st.Restarts) != 1 || st.Restarts[0].Err != "runtime unavailable" {
		t.Fatalf("restarts = %+v, want the kill error recorded", st.Restarts)
	}
}

// The kubelet acts on a liveness failure only for a container that still
// runs. A probe that fails because the container's init exited while it
// ran must not kill: here the exit reaches the engine while the probe is in
// flight.
func TestNoKillWhenTheContainerExitedWhileTheProbeRan(t *testing.T) {
	h := newHarness(t)
	h.tcp.always(livePort, failure)
	release := h.tcp.block(livePort)
	pod := testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort, withThresholds(1, 1))})
	h.m.UpdatePod(pod)
	waitEntered(t, h.tcp, livePort)
	h.m.UpdatePod(withState(pod, node.StateExited))
	release()
	h.settle()
	if k := h.killer.calls(); len(k) != 0 {
		t.Fatalf("killed a container that exited on its own: %+v", k)
	}
	assertNoKillReported(t, h)
	h.wantResult("c1", probespec.Liveness, results.Failure) // like the kubelet: the Failure stands, nothing acts on it
}

// The exit may not have reached the engine yet: the killer asks the runtime
// once, and a container it reports exited is not stopped and not reported.
func TestNoKillWhenTheRuntimeSaysTheContainerExited(t *testing.T) {
	h := newHarness(t)
	h.killer.exited = map[string]bool{"c1": true}
	h.update(testPod("c1", probespec.ContainerProbes{Liveness: failingLiveness(h)}))
	if k := h.killer.calls(); len(k) != 0 {
		t.Fatalf("stopped: %+v", k)
	}
	assertNoKillReported(t, h)
	// The next instance is probed and killed as usual.
	h.update(withContainerID(testPod("c1", probespec.ContainerProbes{Liveness: failingLiveness(h)}), "c2", epoch))
	if k := h.killer.calls(); len(k) != 1 || k[0].id != "c2" {
		t.Fatalf("kills after the restart = %+v, want c2", k)
	}
}

func assertNoKillReported(t *testing.T, h *harness) {
	t.Helper()
	if st, _ := h.m.Container("c1"); len(st.Restarts) != 0 {
		t.Fatalf("restarts recorded: %+v", st.Restarts)
	}
	for _, e := range h.drainEvents() {
		if e.Reason == "Killing" {
			t.Fatalf("Killing event for a container not killed: %+v", e)
		}
	}
}

// A killer that holds a kill back (the kill guard) gets it cancelled when
// the probe recovers meanwhile: the worker keeps probing, and nothing is
// stopped or reported as killed, only deferred.
func TestDeferredKillIsCancelledWhenTheProbeRecovers(t *testing.T) {
	h := newHarness(t)
	h.killer.hold = make(chan struct{})
	h.tcp.always(livePort, failure)
	h.update(testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort, withThresholds(1, 3))}))
	h.step(20 * time.Second) // three failures: the kill asked for, and held
	st, _ := h.m.Container("c1")
	ps := st.Probes[probespec.Liveness]
	if ps.KillDeferred != "node in FullDisruption" || ps.OnHold {
		t.Fatalf("liveness while the kill waits = %+v, want it deferred and probing", ps)
	}
	h.tcp.always(livePort, success)
	h.step(10 * time.Second) // the probe succeeds again
	testutil.WaitFor(t, "the held kill to be cancelled", func() bool {
		h.killer.mu.Lock()
		defer h.killer.mu.Unlock()
		return h.killer.cancelled == 1
	})
	if k := h.killer.calls(); len(k) != 0 {
		t.Fatalf("stopped %+v; want nothing stopped", k)
	}
	var deferred, killing int
	for _, e := range h.drainEvents() {
		switch e.Reason {
		case "KillDeferred":
			deferred++
		case "Killing":
			killing++
		}
	}
	if st, _ := h.m.Container("c1"); deferred != 1 || killing != 0 || len(st.Restarts) != 0 || st.Probes[probespec.Liveness].KillDeferred != "" {
		t.Fatalf("KillDeferred %d, Killing %d, restarts %+v, probe %+v", deferred, killing, st.Restarts, st.Probes[probespec.Liveness])
	}
	h.wantResult("c1", probespec.Liveness, results.Success)
}

// A held kill is for one container instance: when the container is
// replaced (it exited and the runtime started a new one), the kill is
// cancelled and the new instance is not stopped for the old one's failures.
func TestDeferredKillIsCancelledWhenTheContainerIsReplaced(t *testing.T) {
	h := newHarness(t)
	h.killer.hold = make(chan struct{})
	h.tcp.always(livePort, failure)
	pod := testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort, withThresholds(1, 3))})
	h.update(pod)
	h.step(20 * time.Second) // three failures: the kill asked for, and held
	if st, _ := h.m.Container("c1"); st.Probes[probespec.Liveness].KillDeferred == "" {
		t.Fatalf("liveness = %+v, want a held kill", st.Probes[probespec.Liveness])
	}
	h.tcp.always(livePort, success)
	h.update(withContainerID(pod, "c2", epoch.Add(20*time.Second)))
	h.step(time.Second)
	testutil.WaitFor(t, "the held kill to be cancelled", func() bool {
		h.killer.mu.Lock()
		defer h.killer.mu.Unlock()
		return h.killer.cancelled == 1
	})
	close(h.killer.hold) // the guard would let it through now: nothing must go
	h.step(10 * time.Second)
	if k := h.killer.calls(); len(k) != 0 {
		t.Fatalf("stopped %+v; want nothing stopped", k)
	}
	st, _ := h.m.Container("c2")
	if ps := st.Probes[probespec.Liveness]; ps.KillDeferred != "" || len(st.Restarts) != 0 {
		t.Fatalf("the new instance: liveness %+v, restarts %+v", ps, st.Restarts)
	}
	h.wantResult("c2", probespec.Liveness, results.Success)
}

// One that keeps failing is killed once the killer lets the kill through,
// and asked for only once meanwhile.
func TestDeferredKillOfAStillFailingContainerGoesThrough(t *testing.T) {
	h := newHarness(t)
	h.killer.hold = make(chan struct{})
	h.update(testPod("c1", probespec.ContainerProbes{Liveness: failingLiveness(h)}))
	h.step(30 * time.Second) // failing on; the kill waits
	if k := h.killer.calls(); len(k) != 0 {
		t.Fatalf("stopped while held: %+v", k)
	}
	// The probe keeps failing while the kill waits, and the killer is told.
	h.killer.mu.Lock()
	held, failed := h.killer.held, slices.Clone(h.killer.failedAgain)
	h.killer.mu.Unlock()
	if len(failed) == 0 || !failed[len(failed)-1].After(held.Decided) {
		t.Fatalf("failures told after 30 s of failures held: %v; the decision was at %v", failed, held.Decided)
	}
	close(h.killer.hold)
	testutil.WaitFor(t, "the released kill", func() bool { st, _ := h.m.Container("c1"); return len(st.Restarts) == 1 })
	if k := h.killer.calls(); len(k) != 1 || k[0].id != "c1" {
		t.Fatalf("kills after the release = %+v, want c1 once", k)
	}
	if st, _ := h.m.Container("c1"); len(st.Restarts) != 1 {
		t.Fatalf("restarts = %+v", st.Restarts)
	}
}

// The liveness census counts pods, as the node lifecycle controller counts
// nodes: probed are those with a running container probed by liveness
// (once started) or startup (until then); failing are those with such a
// probe at its failureThreshold (a kill decided or waiting), not on its
// first failure. A pod counts once however many containers it has; a
// probe pinned below a huge failureThreshold is never failing.
func TestLivenessCensus(t *testing.T) {
	const failPort, startPort = 1101, 1102
	h := newHarness(t)
	h.killer.hold = make(chan struct{})
	h.tcp.always(livePort, success)
	h.tcp.always(failPort, failure)
	h.tcp.always(startPort, failure)
	named := func(uid, id string, probes probespec.ContainerProbes) node.Pod {
		p := testPod(id, probes)
		p.UID, p.Name = uid, uid
		return p
	}
	failAt3 := probespec.ContainerProbes{Liveness: tcpProbe(failPort, withThresholds(1, 3))}
	twoFailing := named("two-failing", "c6", failAt3)
	twoFailing.Annotations = annotate(probespec.PodProbes{"app": failAt3, "side": failAt3})
	twoFailing.Containers = append(twoFailing.Containers,
		node.Container{ID: "c7", Name: "side", State: node.StateRunning, StartedAt: epoch})
	for _, p := range []node.Pod{
		named("healthy", "c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort)}),
		named("failing", "c2", failAt3),
		named("pinned", "c3", probespec.ContainerProbes{Liveness: tcpProbe(failPort, withThresholds(1, 1000000))}),
		named("starting", "c4", probespec.ContainerProbes{
			Liveness: tcpProbe(livePort), Startup: tcpProbe(startPort, withThresholds(1, 100)),
		}),
		named("failing-startup", "c5", probespec.ContainerProbes{Startup: tcpProbe(startPort, withThresholds(1, 3))}),
		named("unprobed", "c8", probespec.ContainerProbes{Readiness: tcpProbe(livePort)}),
		twoFailing,
	} {
		h.update(p)
	}
	steps := []struct {
		name    string
		advance time.Duration
		failing int
	}{
		{"first failures are not failing", 0, 0},
		{"one failure short of the threshold", 10 * time.Second, 0},
		// failing, failing-startup and two-failing (once for its two
		// containers) have their kills held; pinned is not counted.
		{"at the threshold, kills held", 10 * time.Second, 3},
		{"still held", 30 * time.Second, 3},
	}
	for _, s := range steps {
		h.step(s.advance)
		if probed, failing := h.m.LivenessCensus(); probed != 6 || failing != s.failing {
			t.Fatalf("%s: census = %d probed, %d failing; want 6, %d", s.name, probed, failing, s.failing)
		}
	}
	h.tcp.always(failPort, success)
	h.step(10 * time.Second)
	testutil.WaitFor(t, "the census to show the liveness recoveries (the held kills cancelled)", func() bool {
		probed, failing := h.m.LivenessCensus()
		return probed == 6 && failing == 1 // the startup kill stays held: its probe still fails
	})
}
