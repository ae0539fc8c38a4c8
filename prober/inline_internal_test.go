package prober

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
	"github.com/probelet/probelet/probespec"
	"github.com/probelet/probelet/quietio"
)

// inlineTarget is a fake HTTP target per pod IP that notes when each probe
// starts and, when told, hangs until its context ends or hang passed.
type inlineTarget struct {
	mu     sync.Mutex
	starts map[string][]time.Time
	// hangHost's next probe hangs; hung tells how it ended.
	hangHost atomic.Value // string
	hung     chan error
}

const hang = 800 * time.Millisecond

func (it *inlineTarget) probe(ctx context.Context, t httpprobe.Target) (probe.Result, string, error) {
	it.mu.Lock()
	it.starts[t.Host] = append(it.starts[t.Host], time.Now())
	it.mu.Unlock()
	if h, _ := it.hangHost.Load().(string); h == t.Host && it.hangHost.CompareAndSwap(h, "") {
		select {
		case <-ctx.Done():
			it.hung <- ctx.Err()
		case <-time.After(hang):
			it.hung <- nil
		}
	}
	return probe.Success, "", nil
}

func (it *inlineTarget) count(host string) int {
	it.mu.Lock()
	defer it.mu.Unlock()
	return len(it.starts[host])
}

func (it *inlineTarget) intervals(host string) []time.Duration {
	it.mu.Lock()
	defer it.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(it.starts[host]); i++ {
		out = append(out, it.starts[host][i].Sub(it.starts[host][i-1]))
	}
	return out
}

// runUntilStopped runs m until stop (at the latest, the test's end), which
// returns Run's error.
func runUntilStopped(t *testing.T, m *Manager) (ctx context.Context, stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return ctx, stop
}

func inlinePod(uid, ip string) node.Pod { return inlinePodAt(uid, ip, time.Now()) }

// inlinePodAt is inlinePod with its container started at started.
func inlinePodAt(uid, ip string, started time.Time) node.Pod {
	return node.Pod{
		UID: uid, Name: uid, Namespace: "ns", IPs: []string{ip},
		Annotations: map[string]string{probespec.AnnotationProbes: `{"app": {"readinessProbe": {"httpGet": {"port": 80}, "periodSeconds": 1, "timeoutSeconds": 1}}}`},
		Containers:  []node.Container{{ID: "c-" + uid, Name: "app", State: node.StateRunning, StartedAt: started}},
	}
}

// TestInlineProbesAndTheWatchdog: on the real clock, a probe whose last
// run was quick runs on the scheduling goroutine; when such a probe hangs,
// the standby takes the rounds over and another pod's probes stay on their
// period; a probe hanging inline at shutdown is cancelled, and Run returns.
func TestInlineProbesAndTheWatchdog(t *testing.T) {
	const period = time.Second
	m, err := NewManager(WithAgentStartTime(time.Now().Add(-time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	it := &inlineTarget{starts: map[string][]time.Time{}, hung: make(chan error, 2)}
	m.handlers.http = it.probe
	ctx, stop := runUntilStopped(t, m)
	if err := m.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if quietio.Off() {
		// --io=std: Go timers, and every probe goes to the pool.
		if m.sched.watch != nil {
			t.Fatal("a standby's timer file under --io=std")
		}
		return
	}
	if m.sched.watch == nil {
		t.Skip("no timer file for the standby on this system: every probe goes to the pool")
	}

	// Half a period apart, so each round has one probe of one pod.
	const victim, hog = "10.0.0.1", "10.0.0.2"
	m.UpdatePod(inlinePod("victim", victim))
	testutil.WaitFor(t, "the victim's first probe", func() bool { return it.count(victim) == 1 })
	time.Sleep(period / 2) // spaces the pods on the real clock's grid; it waits for no goroutine
	m.UpdatePod(inlinePod("hog", hog))
	// The first probe goes to the pool; once one was quick, the next run
	// inline.
	testutil.WaitFor(t, "the hog's second probe", func() bool { return it.count(hog) >= 2 })
	if m.sched.inlined.Load() == 0 {
		t.Fatal("no probe ran inline")
	}

	// The hog's next probe hangs on the scheduling goroutine: the standby
	// must take over, so the victim's next start is not held back by it.
	from := it.count(victim)
	it.hangHost.Store(hog)
	select {
	case err := <-it.hung:
		if err != nil {
			t.Fatalf("the hung probe ended with %v, want its whole hang", err)
		}
	case <-time.After(10 * period):
		t.Fatal("the hog's probe never hung")
	}
	if m.sched.takenOver.Load() == 0 {
		t.Fatal("the standby never took over from a probe hanging inline")
	}
	testutil.WaitFor(t, "two more victim probes", func() bool { return it.count(victim) >= from+2 })
	// Without the standby the victim's interval across the hang would be
	// period + hang; with it, at most period + inlineLimit, and half the
	// hang leaves room for a loaded machine.
	for i, d := range it.intervals(victim)[from-1:] {
		if d > period+hang/2 {
			t.Errorf("victim's interval %d after the hang began: %v, want under %v", from+i, d, period+hang/2)
		}
	}

	// After the slow run the hog's next probe goes to the pool, and the
	// one after, quick again, inline: it hangs when the engine stops, is
	// cancelled by the shutdown, and Run returns.
	n := it.count(hog)
	testutil.WaitFor(t, "the hog's probe after the slow one", func() bool { return it.count(hog) > n })
	it.hangHost.Store(hog)
	testutil.WaitFor(t, "the hog's probe to hang", func() bool {
		h, _ := it.hangHost.Load().(string)
		return h == ""
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	inlined, takenOver, wakes := m.sched.inlined.Load(), m.sched.takenOver.Load(), m.sched.standbyWakes.Load()
	t.Logf("inline runs %d, takeovers %d, the standby's wake-ups %d; the victim's intervals %v", inlined, takenOver, wakes, it.intervals(victim))
	// The standby wakes when the watch goes off or is fired (at most once
	// an inline run), and for the stop: never spins on a watch whose time
	// passed.
	if wakes > inlined+2 {
		t.Errorf("the standby woke %d times for %d inline runs", wakes, inlined)
	}
	if err := <-it.hung; !errors.Is(err, context.Canceled) {
		t.Fatalf("the probe hanging at shutdown ended with %v, want it cancelled", err)
	}
}

// fakeClockTarget is a fake HTTP target on the engine's fake clock: each
// probe's start (host, clock time) goes to started; a probe of the host
// in hang blocks until release or its context's end, which hung reports.
type fakeClockTarget struct {
	clock   *clocktesting.FakeClock
	started chan probeStart
	hang    atomic.Value // string
	release chan struct{}
	hung    chan error
}

type probeStart struct {
	host string
	at   time.Time
}

func (ft *fakeClockTarget) probe(ctx context.Context, t httpprobe.Target) (probe.Result, string, error) {
	ft.started <- probeStart{t.Host, ft.clock.Now()}
	if h, _ := ft.hang.Load().(string); h == t.Host && ft.hang.CompareAndSwap(h, "") {
		select {
		case <-ctx.Done():
			ft.hung <- ctx.Err()
		case <-ft.release:
			ft.hung <- nil
		}
	}
	return probe.Success, "", nil
}

// next is the next probe's start, which must be host's at the clock's
// time now.
func (ft *fakeClockTarget) next(t *testing.T, host string) {
	t.Helper()
	select {
	case s := <-ft.started:
		if s.host != host || !s.at.Equal(ft.clock.Now()) {
			t.Fatalf("probe of %s at %v, want %s at %v", s.host, s.at, host, ft.clock.Now())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s's probe never started", host)
	}
}

// TestInlineRunsAndTheStandbyOnTheFakeClock is the production scheduler's
// inline path, step by step on the fake clock: a probe whose last run was
// quick runs on the scheduling goroutine; one that hangs there holds
// another pod's probe back not a moment past its due time, because the
// standby's watch (an alarm of the same clock) goes off and the standby
// takes the rounds over; the slow probe's next run goes to the pool; a
// probe hanging inline at shutdown is cancelled, and Run returns.
func TestInlineRunsAndTheStandbyOnTheFakeClock(t *testing.T) {
	if quietio.Off() {
		t.Skip("--io=std: every probe goes to the pool (TestInlineProbesAndTheWatchdog checks that)")
	}
	const half = 500 * time.Millisecond // the pods' probes are half a period apart
	c := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	m, err := NewManager(WithClock(c), WithAgentStartTime(c.Now().Add(-time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	ft := &fakeClockTarget{clock: c, started: make(chan probeStart, 8), release: make(chan struct{}), hung: make(chan error, 1)}
	m.handlers.http = ft.probe
	ctx, stop := runUntilStopped(t, m)
	idle := func() {
		t.Helper()
		if err := m.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	step := func() {
		t.Helper()
		idle()
		c.Step(half)
	}
	const victim, hog = "10.0.0.1", "10.0.0.2"
	m.UpdatePod(inlinePodAt("victim", victim, c.Now()))
	ft.next(t, victim) // t0: the first run goes to the pool
	step()
	m.UpdatePod(inlinePodAt("hog", hog, c.Now()))
	ft.next(t, hog) // t0+½
	step()
	ft.next(t, victim) // t0+1: quick last time, so inline
	if n := m.sched.inlined.Load(); n != 1 {
		t.Fatalf("%d probes ran inline, want the victim's second", n)
	}

	// The hog's second probe runs inline and hangs: the watch, set for the
	// victim's next due time, goes off with the clock, and the standby runs
	// the victim's probe on time while the lead is still in the hog's.
	ft.hang.Store(hog)
	step()
	ft.next(t, hog) // t0+1½, inline
	c.Step(half)
	ft.next(t, victim) // t0+2, on time
	if n := m.sched.takenOver.Load(); n != 1 {
		t.Fatalf("the standby took over %d times, want once", n)
	}
	ft.release <- struct{}{}
	if err := <-ft.hung; err != nil {
		t.Fatalf("the hung probe ended with %v, want released", err)
	}

	// The hog's run took half a period: its next goes to the pool, and the
	// one after, quick again, inline.
	inlined := m.sched.inlined.Load()
	step()
	ft.next(t, hog) // t0+2½
	step()
	ft.next(t, victim) // t0+3
	step()
	ft.next(t, hog) // t0+3½
	if n := m.sched.inlined.Load() - inlined; n != 2 {
		t.Fatalf("%d probes ran inline after the slow one, want the victim's and the hog's latest", n)
	}

	// A probe hanging inline at shutdown is cancelled, and Run returns.
	ft.hang.Store(victim)
	step()
	ft.next(t, victim) // t0+4, inline
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := <-ft.hung; !errors.Is(err, context.Canceled) {
		t.Fatalf("the probe hanging at shutdown ended with %v, want it cancelled", err)
	}
	if wakes, runs := m.sched.standbyWakes.Load(), m.sched.inlined.Load(); wakes > runs+2 {
		t.Errorf("the standby woke %d times for %d inline runs", wakes, runs)
	}
}
