package prober

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/probespec"
)

// TestSchedulerLagSeesAWedgedScheduler: a scheduler that sleeps, with or
// without work due, has no lag; one that cannot go round (here: its lock
// held, as by a wedged round) falls behind by the clock, and SchedulerLag
// still answers.
func TestSchedulerLagSeesAWedgedScheduler(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	m, err := NewManager(WithClock(clk), WithTCPProber(&recorder{res: probe.Success}), WithAgentStartTime(t0.Add(-time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if _, running := m.SchedulerLag(); running {
		t.Fatal("running before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	settle := func() {
		t.Helper()
		if err := m.WaitIdle(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	wantLag := func(want time.Duration) {
		t.Helper()
		lag, running := m.SchedulerLag()
		if !running || lag != want {
			t.Fatalf("SchedulerLag = %v, running %v; want %v, running", lag, running, want)
		}
	}
	settle()
	clk.Step(time.Hour)
	settle()
	wantLag(0) // nothing to probe: idle, not stalled

	m.UpdatePod(node.Pod{
		UID: "u", Name: "web", Namespace: "ns", IPs: []string{"10.0.0.1"},
		Annotations: map[string]string{probespec.AnnotationProbes: `{"app": {"livenessProbe": {"tcpSocket": {"port": 80}}}}`},
		Containers:  []node.Container{{ID: "c1", Name: "app", State: node.StateRunning, StartedAt: clk.Now()}},
	})
	settle()
	clk.Step(25 * time.Second)
	settle()
	wantLag(0) // asleep until the next period

	// Wedge it: the round due in 5 s cannot start.
	m.mu.Lock()
	clk.Step(35 * time.Second)
	wantLag(30 * time.Second)
	m.mu.Unlock()
	settle()
	wantLag(0)

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, running := m.SchedulerLag(); running {
		t.Fatal("running after Run returned")
	}
}
