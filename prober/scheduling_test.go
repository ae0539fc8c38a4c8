package prober_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// waitEntered waits for a gated probe to start.
func waitEntered(t *testing.T, f *fakeTCP, port int) {
	t.Helper()
	select {
	case p := <-f.entered:
		if p != port {
			t.Fatalf("probe entered on port %d, want %d", p, port)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("probe never started")
	}
}

func TestInFlightProbeIsNotDispatchedAgain(t *testing.T) {
	h := newHarness(t)
	release := h.tcp.block(readyPort)
	h.m.UpdatePod(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withPeriod(1))}))
	waitEntered(t, h.tcp, readyPort)
	for range 5 { // five periods pass while the probe hangs
		h.clock.Step(time.Second)
	}
	release()
	h.settle()
	// The hung run, then one catch-up run at once; never five.
	if got := h.tcp.count(readyPort); got != 2 {
		t.Fatalf("probes = %d, want 2", got)
	}
	h.step(time.Second)
	if got := h.tcp.count(readyPort); got != 3 {
		t.Fatalf("probes one period later = %d, want 3", got)
	}
}

func TestStoppingAWorkerCancelsItsInFlightProbe(t *testing.T) {
	h := newHarness(t)
	h.tcp.block(readyPort) // never released: only cancellation ends it
	pod := testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)})
	h.m.UpdatePod(pod)
	waitEntered(t, h.tcp, readyPort)
	h.m.RemovePod(pod.UID)
	h.settle() // returns only once the cancelled probe has finished
	if ev := h.drainEvents(); len(ev) != 0 {
		t.Fatalf("a cancelled probe of a stopped worker emitted %+v", ev)
	}
}

func TestRunForAContainerTheWorkerLeftIsDiscarded(t *testing.T) {
	h := newHarness(t)
	release := h.tcp.block(readyPort)
	h.tcp.then(readyPort, success)
	pod := testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)})
	h.m.UpdatePod(pod)
	waitEntered(t, h.tcp, readyPort)
	restarted := withContainerID(pod, "c2", epoch)
	h.m.UpdatePod(restarted) // the worker follows c2 once the c1 run ends
	release()
	h.settle()
	// c1's Success must not count for c2: c2 was probed afresh.
	if got := h.tcp.count(readyPort); got != 2 {
		t.Fatalf("probes = %d, want 2 (stale run, then c2 at once)", got)
	}
	for _, c := range h.drainChanges() {
		if c.ContainerID == "c1" && c.Result == results.Success {
			t.Fatalf("stale run published %+v", c)
		}
	}
}

func TestConcurrencyLimitedPoolStillRunsEveryProbe(t *testing.T) {
	h := newHarness(t, prober.WithConcurrency(2))
	release := h.tcp.block(readyPort)
	for i := range 5 {
		pod := testPod(fmt.Sprintf("c%d", i), probespec.ContainerProbes{Readiness: tcpProbe(readyPort)})
		pod.UID = fmt.Sprintf("uid-%d", i)
		h.m.UpdatePod(pod)
	}
	// Two probes hang; the other three wait for a runner (the bound
	// itself is checked deterministically in TestPoolBoundsRunnersAndClosesThem).
	waitEntered(t, h.tcp, readyPort)
	waitEntered(t, h.tcp, readyPort)
	release()
	h.settle()
	if got := h.tcp.count(readyPort); got != 5 {
		t.Fatalf("probes = %d, want 5", got)
	}
}

func TestWaitIdleWaitsForRunAndFailsOnceStopped(t *testing.T) {
	m, err := prober.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.WaitIdle(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitIdle before Run = %v, want it to wait (here: for its context)", err)
	}
	stop := run(t, m)
	if err := m.WaitIdle(context.Background()); err != nil {
		t.Fatalf("WaitIdle while running: %v", err)
	}
	stop()
	if err := m.WaitIdle(context.Background()); err == nil {
		t.Fatal("WaitIdle on a stopped manager must fail")
	}
}

func TestStopEndsEverythingAndClosesSubscriptions(t *testing.T) {
	h := newHarness(t)
	h.tcp.block(readyPort)
	h.m.UpdatePod(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)}))
	waitEntered(t, h.tcp, readyPort)
	changes, _ := h.m.SubscribeResults(1)
	h.stop() // must cancel the hung probe and return
	h.stop()
	if _, open := <-changes; open {
		for range changes {
		}
	}
	if err := h.m.Run(context.Background()); err == nil {
		t.Fatal("Run after the engine stopped must fail")
	}
	h.m.UpdatePod(testPod("c2", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)}))
	if got := h.m.Containers(); len(got) != 0 {
		t.Fatalf("a stopped manager took a pod: %+v", got)
	}
}

func TestSubscribersNeverBlockProbing(t *testing.T) {
	h := newHarness(t)
	slow, cancel := h.m.SubscribeResults(1) // never read
	defer cancel()
	h.tcp.always(readyPort, success)
	for i := range 3 {
		pod := testPod(fmt.Sprintf("c%d", i), probespec.ContainerProbes{Readiness: tcpProbe(readyPort)})
		pod.UID = fmt.Sprintf("uid-%d", i)
		h.update(pod)
	}
	if len(slow) != 1 {
		t.Fatalf("slow subscriber holds %d, want its buffer of 1", len(slow))
	}
	// 3 seeds + 3 successes, 1 delivered: 5 dropped.
	if got := h.droppedTotal("results"); got != 5 {
		t.Fatalf("probelet_subscriber_dropped_total{stream=results} = %v, want 5", got)
	}
	h.wantResult("c2", probespec.Readiness, results.Success)
}

// TestEngineOnTheRealClock runs the scheduler on the real clock, whose
// alarm is a timer file on Linux (every other test uses a fake clock): the
// first probe runs at once, the next one a period later, and the end of
// Run's context ends the scheduler's wait.
func TestEngineOnTheRealClock(t *testing.T) {
	tcp := newFakeTCP()
	m, err := prober.NewManager(prober.WithTCPProber(tcp), prober.WithAgentStartTime(time.Now().Add(-time.Hour)),
		prober.WithSpecParser(rawSpecs{}))
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, m)
	defer stop()
	m.UpdatePod(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withPeriod(1))}))
	for i := range 2 {
		select {
		case <-tcp.seen:
		case <-time.After(10 * time.Second):
			t.Fatalf("probe %d never ran", i+1)
		}
	}
	stop()
}

// TestStartTimeToldMidRunRunsNothingMore: on CRI-O the start time comes
// from CRI after the container runs, often while its first probe is in
// flight (a loaded node). It settles the seed; it is no reason to probe
// again, off the period's grid (the soak on CRI-O saw runs milliseconds
// apart). Told between runs, it probes nothing either.
func TestStartTimeToldMidRunRunsNothingMore(t *testing.T) {
	for _, midRun := range []bool{true, false} {
		t.Run(fmt.Sprintf("mid-run=%v", midRun), func(t *testing.T) {
			// The agent runs for an hour already: no first-tick jitter.
			h := newHarness(t, prober.WithAgentStartTime(epoch.Add(-time.Hour)))
			h.tcp.always(readyPort, success)
			release := h.tcp.block(readyPort)
			pod := withContainerID(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withPeriod(10))}), "c1", time.Time{})
			h.m.UpdatePod(pod)
			waitEntered(t, h.tcp, readyPort)
			if !midRun {
				release()
				h.settle()
			}
			h.m.UpdatePod(withContainerID(pod, "c1", epoch))
			if midRun {
				release()
				h.settle()
			}
			if got := h.tcp.count(readyPort); got != 1 {
				t.Fatalf("probes = %d, want the one run", got)
			}
			h.wantResult("c1", probespec.Readiness, results.Success)
			h.step(10 * time.Second)
			if got := h.tcp.count(readyPort); got != 2 {
				t.Fatalf("probes a period later = %d, want 2", got)
			}
		})
	}
}
