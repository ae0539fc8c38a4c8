package prober_test

import (
	"context"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// startingTCP begins probes like the dialer's StartTCP: ports in now are
// answered within the start, ports in later come back under way (Finish
// answers, unless its gate holds it), and every other port is declined,
// for the fake dialer it embeds.
type startingTCP struct {
	*fakeTCP
	mu       sync.Mutex
	now      map[int]answer
	later    map[int]answer
	starts   map[int]int
	finishes map[int]int
	// finished receives each Finish's ctx error (nil while the probe was
	// wanted).
	finished chan error
	gate     chan struct{}
	// handOver, with clock, is how long after a start the runner takes it
	// (the fake clock moves on by that much within StartTCP).
	handOver time.Duration
	clock    *clocktesting.FakeClock
}

var _ probe.TCPStarter = (*startingTCP)(nil)

func newStartingTCP(now, later map[int]answer) *startingTCP {
	return &startingTCP{fakeTCP: newFakeTCP(), now: now, later: later,
		starts: map[int]int{}, finishes: map[int]int{}, finished: make(chan error, 100)}
}

func (f *startingTCP) StartTCP(t probe.TCPTarget) (probe.Result, string, probe.Method, probe.TCPPending, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts[t.Port]++
	if a, ok := f.now[t.Port]; ok {
		return a.res, a.out, probe.MethodDial, nil, true
	}
	if a, ok := f.later[t.Port]; ok {
		if f.clock != nil {
			f.clock.Step(f.handOver)
		}
		return "", "", probe.MethodDial, &pendingTCP{f: f, port: t.Port, a: a, gate: f.gate}, false
	}
	return "", "", probe.MethodDial, nil, false
}

func (f *startingTCP) count(m map[int]int, port int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return m[port]
}

type pendingTCP struct {
	f    *startingTCP
	port int
	a    answer
	gate chan struct{}
}

func (p *pendingTCP) Finish(ctx context.Context) (probe.Result, string, probe.Method, error) {
	if p.gate != nil {
		select {
		case <-p.gate:
		case <-ctx.Done():
		}
	}
	p.f.mu.Lock()
	p.f.finishes[p.port]++
	p.f.mu.Unlock()
	p.f.finished <- ctx.Err()
	if ctx.Err() != nil {
		return probe.Unknown, "", probe.MethodDial, ctx.Err()
	}
	return p.a.res, p.a.out, probe.MethodDial, nil
}

// A TCP prober that begins probes without blocking answers at the start
// when it can, has a runner finish what it began, and leaves the rest to
// ProbeTCP: each probe dialled once, recorded like any run.
func TestTCPProbesBegunOnTheSchedulingGoroutine(t *testing.T) {
	tcp := newStartingTCP(map[int]answer{livePort: success}, map[int]answer{readyPort: failure})
	h := newHarness(t, prober.WithTCPProber(tcp))
	h.update(testPod("c1", probespec.ContainerProbes{
		Liveness:  tcpProbe(livePort, withPeriod(1)),
		Readiness: tcpProbe(readyPort, withPeriod(1), withThresholds(1, 1)),
		Startup:   tcpProbe(startPort, withPeriod(1)),
	}))
	h.step(2 * time.Second)
	for _, c := range []struct {
		port int
		// finished: each start finished by a runner; dialled: each
		// start declined and dialled instead.
		finished, dialled bool
	}{
		{port: livePort},
		{port: readyPort, finished: true},
		{port: startPort, dialled: true},
	} {
		s, f, d := tcp.count(tcp.starts, c.port), tcp.count(tcp.finishes, c.port), tcp.fakeTCP.count(c.port)
		want := func(b bool) int { return map[bool]int{true: s}[b] }
		if s == 0 || f != want(c.finished) || d != want(c.dialled) {
			t.Errorf("port %d: %d starts, %d finished, %d dialled; want starts, finished %v, dialled %v", c.port, s, f, d, c.finished, c.dialled)
		}
	}
	h.wantResult("c1", probespec.Liveness, results.Success)
	h.wantResult("c1", probespec.Readiness, results.Failure)
	if ps := h.probeStatus("c1", probespec.Readiness); ps.LastOutput != failure.out || ps.Method != probe.MethodDial {
		t.Fatalf("readiness = %+v, want the finished run's output via dial", ps)
	}
}

// A probe begun for a container that goes away before a runner finishes it
// is still finished — with its ctx ended, which releases it — and dropped.
func TestTCPProbeBegunIsReleasedWhenItsWorkerStops(t *testing.T) {
	tcp := newStartingTCP(nil, map[int]answer{readyPort: success})
	tcp.gate = make(chan struct{}) // Finish waits for the gate or ctx's end
	h := newHarness(t, prober.WithTCPProber(tcp))
	h.m.UpdatePod(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withPeriod(1))}))
	testutil.WaitFor(t, "the probe to begin", func() bool { return tcp.count(tcp.starts, readyPort) > 0 })
	h.m.RemovePod(testPod("c1", probespec.ContainerProbes{}).UID)
	select {
	case err := <-tcp.finished:
		if err == nil {
			t.Fatal("Finish ran with a live ctx for a removed pod")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the begun probe was never finished")
	}
	h.settle()
	if _, ok := h.m.Container("c1"); ok {
		t.Fatal("c1 still known after its pod was removed")
	}
}

// A probe begun on the scheduling goroutine and finished by a runner is
// timed from its start, not from the hand-over: its record's time is when
// the connect was issued and its duration includes the wait for a runner.
func TestTCPProbeBegunIsTimedFromItsStart(t *testing.T) {
	const handOver = 300 * time.Millisecond
	tcp := newStartingTCP(nil, map[int]answer{readyPort: success})
	h := newHarness(t, prober.WithTCPProber(tcp))
	tcp.clock, tcp.handOver = h.clock, handOver
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withPeriod(10))}))
	h.settle()
	ps := h.probeStatus("c1", probespec.Readiness)
	if len(ps.History) == 0 {
		t.Fatal("no run recorded")
	}
	rec := ps.History[len(ps.History)-1]
	if end := rec.Time.Add(rec.Duration); rec.Duration < handOver || !end.Equal(h.clock.Now()) {
		t.Fatalf("run recorded at %v for %v (ends %v); want %v before now (%v), for at least %v",
			rec.Time, rec.Duration, end, handOver, h.clock.Now(), handOver)
	}
}
