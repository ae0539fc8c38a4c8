package prober

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/probespec"
)

func TestStopIsIdempotentAndRemovesTheCachedResult(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &recorder{res: probe.Success}
	m, err := NewManager(WithClock(clocktesting.NewFakeClock(t0)), WithTCPProber(r), WithAgentStartTime(t0.Add(-time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	pod := node.Pod{
		UID: "u", Name: "web", Namespace: "ns", IPs: []string{"10.0.0.1"},
		Annotations: map[string]string{probespec.AnnotationProbes: `{"app": {"livenessProbe": {"tcpSocket": {"port": 80}}}, "side": {"readinessProbe": {"tcpSocket": {"port": 80}}}}`},
		Containers: []node.Container{{ID: "c1", Name: "app", State: node.StateRunning, StartedAt: t0},
			{ID: "c2", Name: "side", State: node.StateRunning, StartedAt: t0}},
	}
	settle := func() {
		if err := m.WaitIdle(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	m.UpdatePod(pod)
	settle()
	if n := m.reg.cache.Len(); n != 2 {
		t.Fatalf("cached results = %d, want 2", n)
	}
	// The pod spec rejects app's probes (no such container): its liveness
	// worker stops.
	readinessOnly := pod
	readinessOnly.API = &node.APIPod{Spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "side"}}}}
	m.UpdatePod(readinessOnly)
	settle()
	if n := m.reg.cache.Len(); n != 1 {
		t.Fatalf("cached results after the liveness worker stopped = %d, want 1", n)
	}
	m.mu.Lock()
	w := m.reg.pods["u"].worker("side", probespec.Readiness)
	m.stopWorker(w)
	m.stopWorker(w) // idempotent
	m.mu.Unlock()
	if n := m.reg.cache.Len(); n != 0 {
		t.Fatalf("cached results after stopping = %d, want 0", n)
	}
	m.RemovePod("u")
	m.RemovePod("u")
	settle()
	if len(m.reg.pods) != 0 || len(m.reg.byID) != 0 {
		t.Fatalf("pod state left: %d pods, %d container IDs", len(m.reg.pods), len(m.reg.byID))
	}
}
