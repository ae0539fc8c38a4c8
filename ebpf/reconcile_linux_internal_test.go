//go:build linux

package ebpf

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/ebpf/listeners"
	"github.com/probelet/probelet/ebpf/netns"
	"github.com/probelet/probelet/ebpf/sockdiag"
	"github.com/probelet/probelet/prober/probe"
)

const testInterval = 10 * time.Second

// reconcileEnv is a short-circuit on a fake clock whose reconcile passes
// the test triggers and waits for.
type reconcileEnv struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	p      *TCPProber
	sc     *linuxSC
	passes chan struct{}
}

func newReconcileEnv(t *testing.T) *reconcileEnv {
	ebpftest.RequireRoot(t)
	clk := clocktesting.NewFakeClock(time.Now())
	p, err := NewTCPProber(context.Background(), ModeEBPF, WithClock(clk), WithReconcileInterval(testInterval), WithRegisterer(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	e := &reconcileEnv{t: t, clock: clk, p: p, sc: p.sc.(*linuxSC), passes: make(chan struct{})}
	hook := func() { e.passes <- struct{}{} }
	e.sc.afterReconcile.Store(&hook)
	return e
}

// pass runs one reconcile pass through the loop.
func (e *reconcileEnv) pass() {
	e.t.Helper()
	e.clock.Step(testInterval)
	select {
	case <-e.passes:
	case <-time.After(10 * time.Second):
		e.t.Fatal("no reconcile pass")
	}
}

func (e *reconcileEnv) probe(ns *ebpftest.NetNS, port int) (probe.Result, probe.Method) {
	e.t.Helper()
	target := probe.TCPTarget{Host: ns.PodIP.String(), Port: port, InPod: true, NetNSPath: ns.Path, Timeout: time.Second}
	res, _, method, err := e.p.ProbeTCP(context.Background(), target)
	if err != nil {
		e.t.Fatal(err)
	}
	return res, method
}

func cookieOf(t *testing.T, ns *ebpftest.NetNS, port int) uint64 {
	t.Helper()
	socks, err := sockdiag.ListenersIn(ns.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range socks {
		if int(s.Port) == port {
			return s.Cookie
		}
	}
	t.Fatalf("no listener on %d", port)
	return 0
}

func TestReconcileRepairsDrift(t *testing.T) {
	e := newReconcileEnv(t)
	ns, err := ebpftest.NewNetNS(10)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	l, err := ns.Listen(ebpftest.ListenConfig{Addr: ns.PodIP})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if res, method := e.probe(ns, l.Port); res != probe.Success || method != probe.MethodEBPF {
		t.Fatalf("probe = %s via %s, want success via ebpf", res, method)
	}
	// Lose the listener, as if its event had been dropped.
	ino, _ := e.sc.paths.inode(ns.Path, e.sc.table)
	e.sc.table.Remove(0, cookieOf(t, ns, l.Port))
	if v := e.sc.table.Lookup(ino, ns.PodIP, uint16(l.Port)); v != listeners.Refused {
		t.Fatalf("after losing the listener: %s, want refused", v)
	}
	e.pass()
	if got := counterValue(e.p.metrics.drift.WithLabelValues("missing")); got != 1 {
		t.Errorf("drift{missing} = %v, want 1", got)
	}
	if res, method := e.probe(ns, l.Port); res != probe.Success || method != probe.MethodEBPF {
		t.Errorf("probe after reconcile = %s via %s, want success via ebpf", res, method)
	}
}

func TestReconcileForgetsUnprobedAndDeletedNamespaces(t *testing.T) {
	e := newReconcileEnv(t)
	kept, err := ebpftest.NewNetNS(11)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	gone, err := ebpftest.NewNetNS(12)
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	e.probe(kept, 1)
	e.probe(gone, 1)
	if n := len(e.sc.paths.entries()); n != 2 {
		t.Fatalf("%d cached namespaces, want 2", n)
	}
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	e.pass()
	if _, ok := e.sc.paths.entries()[kept.Path]; !ok || len(e.sc.paths.entries()) != 1 {
		t.Fatalf("after a pass: %v, want only %s", e.sc.paths.entries(), kept.Path)
	}
	e.pass() // kept was not probed during the last interval
	if n := len(e.sc.paths.entries()); n != 0 {
		t.Fatalf("%d cached namespaces after an idle interval, want 0", n)
	}
}

// The tracker sees the listeners of every pod on the node, probed or not:
// each leaves an entry in the table, which must go once its listeners have
// closed, or a node that runs pods for months grows it without bound.
func TestReconcileSweepsNamespacesWhoseListenersClosed(t *testing.T) {
	e := newReconcileEnv(t)
	unprobed, err := ebpftest.NewNetNS(14)
	if err != nil {
		t.Fatal(err)
	}
	defer unprobed.Close()
	probed, err := ebpftest.NewNetNS(15)
	if err != nil {
		t.Fatal(err)
	}
	defer probed.Close()
	unprobedIno, err := netns.Inode(unprobed.Path) // not through the probe path cache
	if err != nil {
		t.Fatal(err)
	}
	l, err := unprobed.Listen(ebpftest.ListenConfig{Addr: unprobed.PodIP})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !e.sc.table.Holds(unprobedIno) {
		t.Fatal("the tracker did not see the unprobed pod's listener")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if res, _ := e.probe(probed, 1); res != probe.Failure { // confirmed empty
		t.Fatalf("probe of a namespace without listeners: %s", res)
	}
	probedIno := mustInode(t, e, probed)
	if err := e.p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.pass()
	if e.sc.table.Holds(unprobedIno) {
		t.Error("the table kept the entry of an unprobed namespace whose listeners closed")
	}
	if !e.sc.table.Holds(probedIno) {
		t.Error("the table dropped the entry of a namespace probed during the interval")
	}
	e.pass() // not probed during the last interval
	if e.sc.table.Holds(probedIno) {
		t.Error("the table kept the entry of a namespace no longer probed")
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// dumpCount is how many sock_diag dumps the short-circuit tried.
func (s *linuxSC) dumpCount() uint64 {
	s.diagMu.Lock()
	defer s.diagMu.Unlock()
	return s.dumps
}

func TestReconcileDumpsOnlyNamespacesThatCanHaveChanged(t *testing.T) {
	e := newReconcileEnv(t)
	ns, err := ebpftest.NewNetNS(13)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	l, err := ns.Listen(ebpftest.ListenConfig{Addr: ns.PodIP})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// passDumps probes the namespace (so the pass keeps it) and reports
	// how many dumps the pass made.
	passDumps := func() uint64 {
		t.Helper()
		e.probe(ns, l.Port)
		before := e.sc.dumpCount()
		e.pass()
		return e.sc.dumpCount() - before
	}
	e.probe(ns, l.Port) // the first probe confirms the namespace: a dump
	if n := passDumps(); n != 0 {
		t.Fatalf("a pass dumped a settled namespace %d times", n)
	}
	other, err := ns.Listen(ebpftest.ListenConfig{Addr: ns.PodIP})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := e.p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := passDumps(); n != 1 {
		t.Fatalf("after a new listener, the pass dumped %d times, want 1", n)
	}
	if n := passDumps(); n != 0 {
		t.Fatalf("the pass after that dumped %d times, want 0", n)
	}
	e.sc.table.Invalidate() // what lost events do
	if n := passDumps(); n != 0 && n != 1 {
		t.Fatalf("after lost events: %d dumps", n)
	}
	if !e.sc.table.Settled(mustInode(t, e, ns)) {
		t.Fatal("after lost events, the namespace was not confirmed again")
	}
	// Every safetyPasses-th pass dumps settled namespaces too.
	for e.sc.passes%safetyPasses != safetyPasses-1 {
		passDumps()
	}
	if n := passDumps(); n != 1 {
		t.Fatalf("the safety pass dumped %d times, want 1", n)
	}
}

func mustInode(t *testing.T, e *reconcileEnv, ns *ebpftest.NetNS) uint32 {
	t.Helper()
	ino, err := e.sc.paths.inode(ns.Path, e.sc.table)
	if err != nil {
		t.Fatal(err)
	}
	return ino
}
