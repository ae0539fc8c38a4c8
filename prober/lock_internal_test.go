package prober

import (
	"context"
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/probespec"
)

// lockCheckingTCP answers TCP probes the ways the engine asks on its
// scheduling goroutine — from memory, by a start that completes, by a
// start still under way — and notes any call made while the engine's lock
// is held: those make system calls (an eBPF map lookup, a connect).
type lockCheckingTCP struct {
	m     *Manager
	calls chan string // each call, and whether the lock was free
}

func (f *lockCheckingTCP) note(call string) {
	free := f.m.mu.TryLock()
	if free {
		f.m.mu.Unlock()
	}
	f.calls <- fmt.Sprintf("%s lock free=%v", call, free)
}

func (f *lockCheckingTCP) ProbeTCP(context.Context, probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	return probe.Success, "", probe.MethodDial, nil
}

// Port 1 is answered from memory; 2 by a completed start; 3 by a start
// whose Finish a runner calls.
func (f *lockCheckingTCP) ProbeTCPInstant(t probe.TCPTarget) (probe.Result, string, probe.Method, bool) {
	f.note("instant")
	return probe.Success, "", probe.MethodEBPF, t.Port == 1
}

func (f *lockCheckingTCP) StartTCP(t probe.TCPTarget) (probe.Result, string, probe.Method, probe.TCPPending, bool) {
	f.note("start")
	if t.Port == 3 {
		return probe.Unknown, "", probe.MethodDial, finished{}, false
	}
	return probe.Success, "", probe.MethodDial, nil, true
}

type finished struct{}

func (finished) Finish(context.Context) (probe.Result, string, probe.Method, error) {
	return probe.Success, "", probe.MethodDial, nil
}

// TestNoSystemCallUnderTheEngineLock: the TCP probes a round answers on
// the scheduling goroutine (eBPF lookups, connects) run between the round's
// critical sections, never under the engine's lock. Nothing else takes the
// lock meanwhile: the test drives the clock and reads the calls alone.
func TestNoSystemCallUnderTheEngineLock(t *testing.T) {
	c := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	f := &lockCheckingTCP{calls: make(chan string, 64)}
	m, err := NewManager(WithClock(c), WithTCPProber(f), WithAgentStartTime(c.Now().Add(-time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	// The pods are known before the engine runs: an UpdatePod racing the
	// first round would hold the lock the round's calls check.
	for port := 1; port <= 3; port++ {
		uid := fmt.Sprintf("p%d", port)
		m.UpdatePod(node.Pod{
			UID: uid, Name: uid, Namespace: "ns", IPs: []string{"10.0.0.1"},
			Annotations: map[string]string{probespec.AnnotationProbes: fmt.Sprintf(`{"app": {"readinessProbe": {"tcpSocket": {"port": %d}, "periodSeconds": 1}}}`, port)},
			Containers:  []node.Container{{ID: "c-" + uid, Name: "app", State: node.StateRunning, StartedAt: c.Now()}},
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// Ports 2 and 3 ask both ways, port 1 once: five calls a period. The
	// test waits for idle only once a period's calls came, so the lock is
	// the engine's alone while they are made.
	for period := range 3 {
		for range 5 {
			select {
			case call := <-f.calls:
				if call[len(call)-5:] != "=true" {
					t.Errorf("period %d: %s: a system call under the engine's lock", period, call)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("period %d: the round's TCP probes never ran", period)
			}
		}
		if err := m.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		c.Step(time.Second)
	}
}
