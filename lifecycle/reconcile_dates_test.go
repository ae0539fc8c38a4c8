package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/lifecycle"
)

// runReconciler runs r until the test ends.
func runReconciler(t *testing.T, r *lifecycle.Reconciler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func createdAt(c *lifecycle.Cache) map[string]time.Time {
	out := map[string]time.Time{}
	for _, p := range c.Pods() {
		out[p.SandboxID] = p.CreatedAt
	}
	return out
}

// Pods learned from Synchronize carry no creation time; the reconciler
// reads it from CRI right after, whether or not the periodic reconcile is
// on, retrying while CRI is not serving, and never counts it as drift.
func TestReconcilerDatesSynchronizedPods(t *testing.T) {
	created := t0.Add(-time.Hour)
	tests := []struct {
		name      string
		interval  time.Duration
		failLists int
	}{
		{name: "reconcile off", interval: 0},
		{name: "reconcile on", interval: 5 * time.Minute},
		{name: "CRI down twice first", interval: 0, failLists: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			dated := sandbox("sbA", "uidA")
			dated.CreatedAt = created
			rt := &fakeRuntime{sbs: []lifecycle.ListedSandbox{listed(dated, true)}, failLists: tt.failLists}
			r, err := lifecycle.NewReconciler(e.cache, rt, tt.interval, lifecycle.WithReconcileClock(e.clock))
			if err != nil {
				t.Fatal(err)
			}
			e.cache.Sync(t0, []lifecycle.Sandbox{sandbox("sbA", "uidA")}, []lifecycle.Container{ctr("a1", "sbA", "web", running, t0)})
			if got := createdAt(e.cache)["sbA"]; !got.IsZero() {
				t.Fatalf("CreatedAt = %v before the reconciler ran", got)
			}
			runReconciler(t, r)
			for i := 0; i < tt.failLists; i++ {
				testutil.WaitFor(t, "the reconciler", func() bool { return rt.listCount() == i+1 && e.clock.HasWaiters() })
				e.clock.Step(30 * time.Second) // beyond any backoff step
			}
			testutil.WaitFor(t, "the reconciler", func() bool { return createdAt(e.cache)["sbA"].Equal(created) })
			if last := e.sink.last(t); last.op != "update" || !last.pod.CreatedAt.Equal(created) {
				t.Errorf("engine's last call = %s with CreatedAt %v, want the dated pod", last.op, last.pod.CreatedAt)
			}
			if n := rt.listCount(); n != tt.failLists+1 {
				t.Errorf("listings = %d, want %d", n, tt.failLists+1)
			}
			for _, kind := range []string{lifecycle.DriftPodMissing, lifecycle.DriftPodState} {
				if v := testutil.Metric(t, e.reg, "probelet_lifecycle_reconcile_drift_total", map[string]string{"kind": kind}); v != 0 {
					t.Errorf("drift %s = %v, want 0", kind, v)
				}
			}
		})
	}
}
