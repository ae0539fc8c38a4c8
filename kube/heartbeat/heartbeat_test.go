package heartbeat_test

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/kube/heartbeat"
	"github.com/probelet/probelet/kube/kubetest"
	"github.com/probelet/probelet/probespec"
)

const (
	nodeName = "n1"
	ns       = "probelet-system"
)

var t0 = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)

// engine fakes the NRI plugin and the probe scheduler.
type engine struct {
	disconnected atomic.Bool
	stopped      atomic.Bool
	lag          atomic.Int64
}

func (e *engine) Connected() bool { return !e.disconnected.Load() }

func (e *engine) SchedulerLag() (time.Duration, bool) {
	return time.Duration(e.lag.Load()), !e.stopped.Load()
}

type env struct {
	t       *testing.T
	cs      *fake.Clientset
	clk     *clocktesting.FakeClock
	engine  *engine
	h       *heartbeat.Heartbeat
	resumed atomic.Int32 // OnResumed calls
	tcpMode heartbeat.TCPMode
	state   [2]string     // StateEndpoint, StateCertSHA256
	every   time.Duration // RenewInterval; 0: the default
	stop    func()
}

func newEnv(t *testing.T, objs ...runtime.Object) *env {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}}
	return &env{t: t, cs: fake.NewClientset(append([]runtime.Object{node}, objs...)...),
		clk: clocktesting.NewFakeClock(t0), engine: &engine{}}
}

// run starts the heartbeat and waits for its first wait.
func (e *env) run() {
	h, err := heartbeat.New(heartbeat.Options{Client: kubetest.Client(e.cs), NodeName: nodeName,
		Runtime: e.engine, Scheduler: e.engine, Clock: e.clk, OnResumed: func() { e.resumed.Add(1) },
		TCPMode: e.tcpMode, StateEndpoint: e.state[0], StateCertSHA256: e.state[1], RenewInterval: e.every})
	if err != nil {
		e.t.Fatal(err)
	}
	e.h = h
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	e.stop = func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("Run: %v", err)
		}
		testutil.NoGoroutines(e.t, "github.com/probelet/probelet/kube/heartbeat.")
	}
	e.t.Cleanup(func() {
		if e.stop != nil {
			e.stop()
		}
	})
	e.armed()
}

// armed waits until the heartbeat waits on the clock again.
func (e *env) armed() {
	e.t.Helper()
	testutil.WaitFor(e.t, "the heartbeat's next wait", e.clk.HasWaiters)
}

// step advances the clock and waits for the beat it causes, if any.
func (e *env) step(d time.Duration) {
	e.t.Helper()
	e.clk.Step(d)
	e.armed()
}

func (e *env) lease() *coordinationv1.Lease {
	e.t.Helper()
	// Through the tracker: the test's reads are not the heartbeat's actions.
	obj, err := e.cs.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), ns, nodeName)
	if err != nil {
		e.t.Fatalf("the Lease: %v", err)
	}
	return obj.(*coordinationv1.Lease)
}

// wantRenewed checks the Lease was last renewed at t0+at.
func (e *env) wantRenewed(at time.Duration) {
	e.t.Helper()
	l := e.lease()
	if l.Spec.RenewTime == nil || !l.Spec.RenewTime.Time.Equal(t0.Add(at)) {
		e.t.Fatalf("renewTime = %v, want t0+%v", l.Spec.RenewTime, at)
	}
}

// writes counts the creates and updates of Leases so far.
func (e *env) writes() (n int) {
	for _, a := range e.cs.Actions() {
		if a.GetResource().Resource == "leases" && (a.GetVerb() == "create" || a.GetVerb() == "update") {
			n++
		}
	}
	return n
}

// TestRenewIntervalIsAChoice: --lease-renew-interval sets both the
// renewals and the duration the Lease says (four of them); a scheduler
// lagging less than it is probing still.
func TestRenewIntervalIsAChoice(t *testing.T) {
	for _, tc := range []struct {
		every       time.Duration
		wantSeconds int32
	}{{0, 40}, {30 * time.Second, 120}, {2500 * time.Millisecond, 10}} {
		t.Run(tc.every.String(), func(t *testing.T) {
			e := newEnv(t)
			e.every = tc.every
			every := cmp.Or(tc.every, probespec.LeaseRenewInterval)
			e.engine.lag.Store(int64(every - time.Millisecond))
			e.run()
			e.wantRenewed(0)
			if got := *e.lease().Spec.LeaseDurationSeconds; got != tc.wantSeconds {
				t.Errorf("leaseDurationSeconds %d, want %d", got, tc.wantSeconds)
			}
			e.step(every - time.Millisecond)
			e.wantRenewed(0)
			e.step(time.Millisecond)
			e.wantRenewed(every)
			if n := e.writes(); n != 2 {
				t.Errorf("%d Lease writes after one interval, want 2", n)
			}
		})
	}
}

func TestRenewsEveryTenSecondsAsTheNodesLease(t *testing.T) {
	e := newEnv(t)
	e.run()
	l := e.lease()
	e.wantRenewed(0)
	if got := ptrVal(l.Spec.HolderIdentity); got != nodeName {
		t.Errorf("holderIdentity = %q, want %q", got, nodeName)
	}
	if got := ptrVal(l.Spec.LeaseDurationSeconds); got != 40 {
		t.Errorf("leaseDurationSeconds = %d, want 40", got)
	}
	want := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: "node-uid"}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0] != want {
		t.Errorf("ownerReferences = %+v, want the Node %+v", l.OwnerReferences, want)
	}
	e.step(9 * time.Second)
	e.wantRenewed(0)
	e.step(time.Second)
	e.wantRenewed(10 * time.Second)
	e.step(10 * time.Second)
	e.wantRenewed(20 * time.Second)
	if n := e.writes(); n != 3 {
		t.Errorf("%d Lease writes, want 3 (one create, two renewals)", n)
	}
	// The renewals update the Lease as last written: no read first.
	var reads int
	for _, a := range e.cs.Actions() {
		if a.GetResource().Resource == "leases" && a.GetVerb() == "get" {
			reads++
		}
	}
	if reads != 1 {
		t.Errorf("%d Lease reads, want 1 (before the create)", reads)
	}
}

func TestStopsRenewingWhileNotProbingAndResumes(t *testing.T) {
	for _, tc := range []struct {
		name          string
		stall, resume func(*engine)
	}{
		{"NRI disconnected", func(e *engine) { e.disconnected.Store(true) }, func(e *engine) { e.disconnected.Store(false) }},
		{"scheduler stalled", func(e *engine) { e.lag.Store(int64(11 * time.Second)) }, func(e *engine) { e.lag.Store(0) }},
		{"scheduler stopped", func(e *engine) { e.stopped.Store(true) }, func(e *engine) { e.stopped.Store(false) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.run()
			tc.stall(e.engine)
			for range 6 { // past the Lease's 40 s
				e.step(10 * time.Second)
			}
			e.wantRenewed(0)
			if n := e.writes(); n != 1 {
				t.Fatalf("%d Lease writes while not probing, want only the first", n)
			}
			if e.h.Holding() == "" {
				t.Fatal("Holding() is empty while the Lease is not renewed")
			}
			tc.resume(e.engine)
			e.step(10 * time.Second)
			e.wantRenewed(70 * time.Second)
			if why := e.h.Holding(); why != "" {
				t.Fatalf("Holding() = %q after a renewal", why)
			}
		})
	}
}

func TestASchedulerALittleLateStillRenews(t *testing.T) {
	e := newEnv(t)
	e.engine.lag.Store(int64(heartbeat.DefaultStallAfter))
	e.run()
	e.step(10 * time.Second)
	e.wantRenewed(10 * time.Second)
}

func TestNoLeaseBeforeTheNodeIsRegistered(t *testing.T) {
	e := &env{t: t, cs: fake.NewClientset(), clk: clocktesting.NewFakeClock(t0), engine: &engine{}}
	e.run()
	if n := e.writes(); n != 0 {
		t.Fatalf("%d Lease writes without a Node to own it, want none", n)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}}
	if _, err := e.cs.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.step(500 * time.Millisecond) // the first retry
	e.wantRenewed(500 * time.Millisecond)
	if refs := e.lease().OwnerReferences; len(refs) != 1 || refs[0].UID != "node-uid" {
		t.Fatalf("ownerReferences = %+v, want the Node", refs)
	}
}

func TestAnUnownedLeaseGetsTheNodeAsOwner(t *testing.T) {
	old := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Namespace: ns},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("someone")}}
	e := newEnv(t, old)
	e.run()
	e.wantRenewed(0)
	l := e.lease()
	if refs := l.OwnerReferences; len(refs) != 1 || refs[0].UID != "node-uid" {
		t.Fatalf("ownerReferences = %+v, want the Node", refs)
	}
	if got := ptrVal(l.Spec.HolderIdentity); got != nodeName {
		t.Errorf("holderIdentity = %q, want %q", got, nodeName)
	}
}

func TestAPIErrorsAreRetriedWithBackOff(t *testing.T) {
	e := newEnv(t)
	var failures atomic.Int32
	e.cs.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failures.Add(-1) >= 0 {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is away"))
		}
		return false, nil, nil
	})
	e.run()
	failures.Store(3)
	e.step(10 * time.Second) // fails; retry in 0.5 s
	e.step(500 * time.Millisecond)
	e.step(time.Second)
	e.wantRenewed(0)
	e.step(2*time.Second - time.Millisecond)
	e.wantRenewed(0)
	e.step(time.Millisecond) // the fourth attempt
	e.wantRenewed(13500 * time.Millisecond)
	e.step(10 * time.Second) // back to the interval
	e.wantRenewed(23500 * time.Millisecond)
	e.stop() // and no goroutine is left
	e.stop = nil
}

func TestAConflictRereadsTheLease(t *testing.T) {
	e := newEnv(t)
	var conflicts atomic.Int32
	e.cs.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts.Add(-1) >= 0 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"},
				nodeName, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	e.run()
	conflicts.Store(1)
	e.step(10 * time.Second) // conflict, read, update: one beat
	e.wantRenewed(10 * time.Second)
}

func ptrVal[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// TestRenewsWithinASecondOfProbingAgain: a heartbeat that holds looks
// again every second, so a probelet whose NRI connection is back (or that
// just started) renews within a second, and tells the readiness writer
// once.
func TestRenewsWithinASecondOfProbingAgain(t *testing.T) {
	e := newEnv(t)
	e.engine.disconnected.Store(true)
	e.run()
	for range 45 { // past the Lease's 40 s
		e.step(time.Second)
	}
	if n := e.writes(); n != 0 {
		t.Fatalf("%d Lease writes before probing, want none", n)
	}
	e.engine.disconnected.Store(false)
	e.step(time.Second)
	e.wantRenewed(46 * time.Second)
	e.step(probespec.LeaseRenewInterval)
	if n := e.resumed.Load(); n != 1 {
		t.Fatalf("OnResumed called %d times, want once", n)
	}
}

// TestTheLeaseSaysHowTCPProbesAreAnswered: each renewal carries the TCP
// mode in force and, when --tcp-mode auto fell back to dialing, why (cut
// to a bound); a mode that comes back clears the reason. No write of its
// own.
func TestTheLeaseSaysHowTCPProbesAreAnswered(t *testing.T) {
	var mode, reason atomic.Pointer[string]
	set := func(m, r string) { mode.Store(&m); reason.Store(&r) }
	set("ebpf", "")
	e := newEnv(t)
	e.tcpMode = func() (string, string) { return *mode.Load(), *reason.Load() }
	e.run()
	long := "tracker: verifier rejected tracker.c: " + strings.Repeat("R1 type=untrusted_ptr_ ", 100)
	for i, tc := range []struct {
		mode, reason string
		wantReason   string
	}{
		{"ebpf", "", ""},
		{"dial", "tracker: load: operation not permitted", "tracker: load: operation not permitted"},
		{"dial", long, long[:1021] + "…"},
		{"ebpf", "", ""},
		{"", "", ""}, // not known yet: neither is written
	} {
		set(tc.mode, tc.reason)
		if i > 0 {
			e.step(10 * time.Second)
		}
		l := e.lease()
		if got, ok := l.Labels[probespec.LabelTCPMode]; got != tc.mode || ok != (tc.mode != "") {
			t.Errorf("step %d: label %s = %q (set %v), want %q", i, probespec.LabelTCPMode, got, ok, tc.mode)
		}
		if got, ok := l.Annotations[probespec.AnnotationTCPModeReason]; got != tc.wantReason || ok != (tc.wantReason != "") {
			t.Errorf("step %d: annotation %s = %q (set %v), want %q", i, probespec.AnnotationTCPModeReason, got, ok, tc.wantReason)
		}
	}
	if n := e.writes(); n != 5 {
		t.Errorf("%d Lease writes, want 5: one per renewal, none of the TCP mode's own", n)
	}
}

// TestTheLeaseSaysWhereTheNodeServesItsProbeState: with a state listener
// the Lease names its endpoint and certificate at each renewal (a Lease a
// previous run left with other ones is corrected by the first); without
// one it names none.
func TestTheLeaseSaysWhereTheNodeServesItsProbeState(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state [2]string
	}{
		{"serving", [2]string{":10263", strings.Repeat("ab", 32)}},
		{"not serving", [2]string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Namespace: ns,
				Annotations: map[string]string{probespec.AnnotationStateEndpoint: ":1", probespec.AnnotationStateCertSHA256: "old"}}}
			e := newEnv(t, old)
			e.state = tc.state
			e.run()
			e.step(probespec.LeaseRenewInterval)
			l := e.lease()
			for i, key := range []string{probespec.AnnotationStateEndpoint, probespec.AnnotationStateCertSHA256} {
				if got, ok := l.Annotations[key]; got != tc.state[i] || ok != (tc.state[i] != "") {
					t.Errorf("annotation %s = %q (set %v), want %q", key, got, ok, tc.state[i])
				}
			}
		})
	}
}
