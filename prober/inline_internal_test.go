package prober

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

func inlinePod(uid, ip string) node.Pod {
	return node.Pod{
		UID: uid, Name: uid, Namespace: "ns", IPs: []string{ip},
		Annotations: map[string]string{probespec.AnnotationProbes: `{"app": {"readinessProbe": {"httpGet": {"port": 80}, "periodSeconds": 1, "timeoutSeconds": 1}}}`},
		Containers:  []node.Container{{ID: "c-" + uid, Name: "app", State: node.StateRunning, StartedAt: time.Now()}},
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()
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
	time.Sleep(period / 2)
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
	cancel()
	stopped = true
	if err := <-done; err != nil {
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
