package monitor

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/controller/zones"
	"github.com/probelet/probelet/internal/testutil"
)

// TestAPassJudgesARenewalFromItsArrival: a renewal the Lease watch
// delivers between passes starts the grace period when it arrived, so a
// silent probelet's pods are marked up to a monitor period sooner than if
// the pass that read it had observed it.
func TestAPassJudgesARenewalFromItsArrival(t *testing.T) {
	const ns = "probelet-system"
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	lease := func(at time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns},
			Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: at}}}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	clk := clocktesting.NewFakeClock(t0)
	cs := fake.NewClientset(node, lease(t0))
	m, err := New(Options{Client: cs, Namespace: ns, Zones: zones.DefaultConfig(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		m.all.Shutdown()
		m.inNS.Shutdown()
	})
	m.all.Start(ctx.Done())
	m.inNS.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), m.leases.HasSynced, m.nodes.HasSynced, m.pods.HasSynced) {
		t.Fatal("caches not synced")
	}
	m.tracker = zones.NewTracker(clk, m.o.Grace, m.o.Renew)
	m.lim = zones.NewLimiters(clk)
	m.mon = zones.NewMonitor(m.o.Zones, m.tracker, m.lim)
	m.pass() // a first seen at t0

	renewed := t0.Add(time.Second)
	clk.SetTime(renewed)
	if _, err := cs.CoordinationV1().Leases(ns).Update(ctx, lease(renewed), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the renewal delivered", func() bool {
		m.seenMu.Lock()
		defer m.seenMu.Unlock()
		return m.seen["a"].renew.Equal(renewed)
	})
	clk.SetTime(t0.Add(DefaultPeriod))
	m.pass() // reads the renewal a monitor period after it arrived

	clk.SetTime(renewed.Add(m.o.Grace))
	if h, _ := m.tracker.Health("a"); h != zones.Suspect {
		t.Fatalf("at the grace period after the renewal arrived: %v, want Suspect", h)
	}
	clk.Step(time.Nanosecond)
	if h, _ := m.tracker.Health("a"); h != zones.Unavailable {
		t.Fatalf("just past the grace period after the renewal arrived: %v, want Unavailable (judged from the pass that read it instead)", h)
	}
}
