package monitor_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/controller/monitor"
	"github.com/probelet/probelet/controller/zones"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/probespec"
)

const ns = "probelet-system"

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

func lease(name string, at time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: at}}}
}

func pod(name, nodeName string, gated bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: nodeName},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: probespec.ConditionReady, Status: corev1.ConditionTrue}}}}
	if gated {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: probespec.ConditionReady}}
	}
	return p
}

type env struct {
	t   *testing.T
	cs  *fake.Clientset
	clk *clocktesting.FakeClock
	rec *record.FakeRecorder
}

func start(t *testing.T, objs ...runtime.Object) *env {
	e := &env{t: t, cs: fake.NewClientset(objs...), clk: clocktesting.NewFakeClock(t0), rec: record.NewFakeRecorder(100)}
	e.startMonitor()
	return e
}

// startMonitor runs a Monitor over the env's clientset until the test ends.
func (e *env) startMonitor() { e.startMonitorWith(e.cs) }

// startMonitorWith runs a Monitor over client (the env's clientset, or one
// wrapping it) until the test ends.
func (e *env) startMonitorWith(client kubernetes.Interface) {
	t := e.t
	m, err := monitor.New(monitor.Options{Client: client, Namespace: ns, Zones: zones.DefaultConfig(), Recorder: e.rec, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		testutil.NoGoroutines(t, "github.com/probelet/probelet/controller/monitor.")
	})
	testutil.WaitFor(t, "the monitor's tickers", e.clk.HasWaiters)
}

// renew writes a fresh renewTime into the named Leases.
func (e *env) renew(names ...string) {
	for _, n := range names {
		if _, err := e.cs.CoordinationV1().Leases(ns).Update(context.Background(), lease(n, e.clk.Now()), metav1.UpdateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// patched lists the pods whose status was patched.
func (e *env) patched() (out []string) {
	for _, a := range e.cs.Actions() {
		if p, ok := a.(interface{ GetName() string }); ok && a.GetVerb() == "patch" && a.GetSubresource() == "status" {
			out = append(out, p.GetName())
		}
	}
	return out
}

// run steps the clock 500 ms at a time (five marking ticks: a zone's one
// token), renewing the named Leases each step, until cond holds.
func (e *env) run(what string, cond func() bool, renewing ...string) {
	e.t.Helper()
	testutil.WaitFor(e.t, what, func() bool {
		e.renew(renewing...)
		e.clk.Step(500 * time.Millisecond)
		return cond()
	})
}

func TestASilentProbeletsGatedPodsAreMarkedOnce(t *testing.T) {
	e := start(t, node("a"), node("b"), lease("a", t0), lease("b", t0),
		pod("a1", "a", true), pod("a2", "a", true), pod("a3", "a", false), pod("b1", "b", true))
	e.run("a's gated pods marked", func() bool { return len(e.patched()) >= 2 }, "b")
	if e.clk.Since(t0) <= monitor.DefaultGracePeriod {
		t.Fatalf("marked after %s, within the grace period", e.clk.Since(t0))
	}
	for _, name := range []string{"a1", "a2"} {
		p, err := e.cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := p.Status.Conditions[0]
		if c.Status != corev1.ConditionFalse || c.Reason != probespec.ReasonProbeletUnavailable || !strings.Contains(c.Message, "node a") {
			t.Errorf("%s: condition %+v, want False, %s, naming node a", name, c, probespec.ReasonProbeletUnavailable)
		}
	}
	// Another 20 s: nothing more, nothing twice.
	deadline := e.clk.Now().Add(20 * time.Second)
	e.run("20 s more", func() bool { return !e.clk.Now().Before(deadline) }, "b")
	if got := e.patched(); len(got) != 2 {
		t.Fatalf("patched %v, want a1 and a2 once each", got)
	}
	for range 2 {
		select {
		case ev := <-e.rec.Events:
			if !strings.HasPrefix(ev, "Warning "+probespec.ReasonProbeletUnavailable) {
				t.Errorf("event %q, want a Warning %s", ev, probespec.ReasonProbeletUnavailable)
			}
		default:
			t.Fatal("fewer than 2 Events")
		}
	}
}

func TestEveryZoneDisruptedMarksNothing(t *testing.T) {
	e := start(t, node("a"), node("b"), lease("a", t0), lease("b", t0), pod("a1", "a", true), pod("b1", "b", true))
	deadline := t0.Add(2 * monitor.DefaultGracePeriod)
	e.run("two grace periods", func() bool { return !e.clk.Now().Before(deadline) })
	if got := e.patched(); len(got) != 0 {
		t.Fatalf("patched %v with every probelet silent, want nothing", got)
	}
	// Each silent node says why once, however many passes held it back.
	want := []string{"Warning " + probespec.EventMarkingHeldBack, "Warning " + probespec.EventMarkingHeldBack}
	if got := e.events(); len(got) != 2 || !strings.HasPrefix(got[0], want[0]) || !strings.HasPrefix(got[1], want[1]) ||
		!strings.Contains(got[0], "every zone is fully disrupted") {
		t.Fatalf("events %q, want one %s on each node naming the full disruption", got, probespec.EventMarkingHeldBack)
	}
}

// TestASmallPartiallyDisruptedZoneMarksNothingAndSaysSo: 3 of 5 probelets
// silent in a zone of no more than --large-cluster-size-threshold nodes is
// PartialDisruption at rate 0, as the node lifecycle controller's
// ReducedQPSFunc; another zone stays Normal, so this is no full
// disruption, and its silent node's pod is marked.
func TestASmallPartiallyDisruptedZoneMarksNothingAndSaysSo(t *testing.T) {
	objs := []runtime.Object{}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		objs = append(objs, zoned(node(n), "z1"), lease(n, t0), pod(n+"1", n, true))
	}
	objs = append(objs, zoned(node("f"), "z2"), zoned(node("g"), "z2"), lease("f", t0), lease("g", t0), pod("f1", "f", true))
	e := start(t, objs...)
	e.run("f1 marked", func() bool { return len(e.patched()) >= 1 }, "d", "e", "g")
	deadline := e.clk.Now().Add(10 * time.Second)
	e.run("10 s more", func() bool { return !e.clk.Now().Before(deadline) }, "d", "e", "g")
	if got := e.patched(); len(got) != 1 || got[0] != "f1" {
		t.Fatalf("patched %v, want only f1 (z2 is Normal; z1 partially disrupted and small)", got)
	}
	held := 0
	for _, ev := range e.events() {
		if strings.HasPrefix(ev, "Warning "+probespec.EventMarkingHeldBack) {
			held++
			if !strings.Contains(ev, `zone "z1" is partially disrupted (3 of 5 probelets silent)`) {
				t.Errorf("event %q, want it to name z1's partial disruption", ev)
			}
		}
	}
	if held != 3 {
		t.Fatalf("%d %s events, want one on each of a, b, c", held, probespec.EventMarkingHeldBack)
	}
}

func zoned(n *corev1.Node, zone string) *corev1.Node {
	n.Labels = map[string]string{corev1.LabelTopologyZone: zone}
	return n
}

// events drains the Events recorded so far.
func (e *env) events() (out []string) {
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func TestANodeWithoutProbeletGetsNotRunning(t *testing.T) {
	e := start(t, node("a"), node("b"), lease("a", t0), pod("b1", "b", true))
	e.run("b1 marked", func() bool { return len(e.patched()) >= 1 }, "a")
	p, err := e.cs.CoreV1().Pods("default").Get(context.Background(), "b1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Status.Conditions[0]; c.Reason != probespec.ReasonProbeletNotRunning || c.Status != corev1.ConditionFalse {
		t.Fatalf("b1: %+v, want False, %s", c, probespec.ReasonProbeletNotRunning)
	}
}

// TestProbeletsStoppedTogetherMarkNothing: two probelets of one zone stop
// at the same moment, their last renewals 9 s apart (renewals are 10 s
// apart). When the first reaches the grace period the other is already
// suspect, so the zone is FullDisruption and nothing is marked; a zone
// judged by the grace period alone would look Normal for those 9 s and
// mark the first node's pods.
func TestProbeletsStoppedTogetherMarkNothing(t *testing.T) {
	e := start(t, node("a"), node("b"), lease("a", t0), lease("b", t0), pod("a1", "a", true), pod("b1", "b", true))
	until := t0.Add(9 * time.Second)
	e.run("b's last renewal", func() bool { return !e.clk.Now().Before(until) }, "b")
	deadline := t0.Add(2 * monitor.DefaultGracePeriod)
	e.run("two grace periods", func() bool { return !e.clk.Now().Before(deadline) })
	if got := e.patched(); len(got) != 0 {
		t.Fatalf("patched %v with both probelets stopped together, want nothing", got)
	}
}

// TestAnAPIServerAwayMarksEachPodOnce: the API server refuses the first
// marks (an outage); the next passes try again, and each pod is marked
// once, with one Event.
func TestAnAPIServerAwayMarksEachPodOnce(t *testing.T) {
	objs := []runtime.Object{node("a"), node("b"), lease("a", t0), lease("b", t0), pod("a1", "a", true), pod("a2", "a", true)}
	e := &env{t: t, cs: fake.NewClientset(objs...), clk: clocktesting.NewFakeClock(t0), rec: record.NewFakeRecorder(100)}
	refused := 0
	e.cs.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refused < 4 {
			refused++
			return true, nil, apierrors.NewServiceUnavailable("the API server is away")
		}
		return false, nil, nil
	})
	e.startMonitor()
	e.run("a's pods marked", func() bool { return e.marked("a1") && e.marked("a2") }, "b")
	deadline := e.clk.Now().Add(20 * time.Second)
	e.run("20 s more", func() bool { return !e.clk.Now().Before(deadline) }, "b")
	if refused != 4 {
		t.Fatalf("%d marks refused, want the 4 the outage refused", refused)
	}
	if got := len(e.events()); got != 2 {
		t.Fatalf("%d Events, want one per pod", got)
	}
	if got := len(e.patched()); got != 6 {
		t.Fatalf("%d patches, want 4 refused and one per pod", got)
	}
}

// marked reports whether the pod's condition is the controller's mark.
func (e *env) marked(name string) bool {
	p, err := e.cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return p.Status.Conditions[0].Reason == probespec.ReasonProbeletUnavailable
}

// TestAHungMarkHoldsNoOneElse: a mark whose API call hangs holds one
// writer, not the judging loop: the next pod of the same node and the pods
// of another zone are marked meanwhile. Every write has a deadline.
func TestAHungMarkHoldsNoOneElse(t *testing.T) {
	cs := fake.NewClientset(zoned(node("a"), "z1"), zoned(node("b"), "z1"), zoned(node("c"), "z2"), zoned(node("d"), "z2"),
		lease("a", t0), lease("b", t0), lease("c", t0), lease("d", t0),
		pod("a1", "a", true), pod("a2", "a", true), pod("c1", "c", true))
	release := make(chan struct{})
	var mu sync.Mutex
	var hung string
	var unbounded []string
	client := &patchHook{Interface: cs, before: func(ctx context.Context, name string) {
		mu.Lock()
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > time.Minute {
			unbounded = append(unbounded, name)
		}
		first := hung == "" && strings.HasPrefix(name, "a")
		if first {
			hung = name
		}
		mu.Unlock()
		if first {
			select { // the API server does not answer this one
			case <-release:
			case <-ctx.Done():
			}
		}
	}}
	e := &env{t: t, cs: cs, clk: clocktesting.NewFakeClock(t0), rec: record.NewFakeRecorder(100)}
	e.startMonitorWith(client)
	t.Cleanup(func() { close(release) }) // before the monitor's own cleanup: the last registered runs first
	marked := func() []string {
		var out []string
		for _, name := range []string{"a1", "a2", "c1"} {
			p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c := p.Status.Conditions[0]; c.Status == corev1.ConditionFalse {
				out = append(out, name)
			}
		}
		return out
	}
	e.run("every pod but the hung one marked", func() bool { return len(marked()) == 2 }, "b", "d")
	mu.Lock()
	defer mu.Unlock()
	if got := marked(); slices.Contains(got, hung) || !slices.Contains(got, "c1") {
		t.Fatalf("marked %v with %s's write hung, want the others", got, hung)
	}
	if len(unbounded) > 0 {
		t.Fatalf("marks written without a deadline: %v", unbounded)
	}
}

// patchHook is a client whose pod patches call before first, outside the
// fake clientset's lock (a reactor runs under it, and would hold every
// other call).
type patchHook struct {
	kubernetes.Interface
	before func(ctx context.Context, name string)
}

// IsWatchListSemanticsUnSupported is the fake clientset's: its informers
// list, then watch.
func (h *patchHook) IsWatchListSemanticsUnSupported() bool { return true }

func (h *patchHook) CoreV1() corev1client.CoreV1Interface {
	return hookedCore{CoreV1Interface: h.Interface.CoreV1(), before: h.before}
}

type hookedCore struct {
	corev1client.CoreV1Interface
	before func(ctx context.Context, name string)
}

func (c hookedCore) Pods(namespace string) corev1client.PodInterface {
	return hookedPods{PodInterface: c.CoreV1Interface.Pods(namespace), before: c.before}
}

type hookedPods struct {
	corev1client.PodInterface
	before func(ctx context.Context, name string)
}

func (p hookedPods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*corev1.Pod, error) {
	p.before(ctx, name)
	return p.PodInterface.Patch(ctx, name, pt, data, opts, sub...)
}
