package prober_test

import (
	"sync"
	"testing"
	"time"

	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// instantTCP answers the ports in mem from memory, like the eBPF table,
// and leaves every other port to the fake dialer it embeds.
type instantTCP struct {
	*fakeTCP
	mu      sync.Mutex
	mem     map[int]answer
	instant map[int]int // ProbeTCPInstant answers per port
	// answered receives the port of every answer from memory.
	answered chan int
}

var _ probe.InstantTCPProber = (*instantTCP)(nil)

func newInstantTCP(mem map[int]answer) *instantTCP {
	return &instantTCP{fakeTCP: newFakeTCP(), mem: mem, instant: map[int]int{}, answered: make(chan int, 100)}
}

func (f *instantTCP) ProbeTCPInstant(t probe.TCPTarget) (probe.Result, string, probe.Method, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.mem[t.Port]
	if !ok {
		return "", "", "", false
	}
	f.instant[t.Port]++
	f.answered <- t.Port
	return a.res, a.out, probe.MethodEBPF, true
}

func (f *instantTCP) instantCount(port int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.instant[port]
}

func TestInMemoryTCPAnswersNeedNoRunner(t *testing.T) {
	tcp := newInstantTCP(map[int]answer{livePort: failure})
	h := newHarness(t, prober.WithTCPProber(tcp), prober.WithConcurrency(1))
	release := tcp.block(readyPort) // the only runner hangs on the readiness dial
	defer release()
	h.m.UpdatePod(testPod("c1", probespec.ContainerProbes{
		Readiness: tcpProbe(readyPort, withPeriod(1)),
		Liveness:  tcpProbe(livePort, withPeriod(1), withThresholds(1, 3)),
	}))
	waitEntered(t, tcp.fakeTCP, readyPort)
	tcp.waitAnswered(t, livePort)
	for range 2 {
		h.m.Containers() // the lock: the scheduler set its alarm and parked
		h.clock.Step(time.Second)
		tcp.waitAnswered(t, livePort)
	}
	h.m.Containers() // the third run is recorded
	if got := tcp.instantCount(livePort); got != 3 {
		t.Fatalf("liveness answered from memory %d times, want 3 (at once, then every second) while the runner hangs", got)
	}
	if got := tcp.count(livePort); got != 0 {
		t.Fatalf("liveness dialed %d times, want 0", got)
	}
	// Recorded like any run: the third failure publishes and kills.
	ps := h.probeStatus("c1", probespec.Liveness)
	if ps.Result != results.Failure || ps.Method != probe.MethodEBPF || ps.LastOutput != failure.out || len(ps.History) != 3 {
		t.Fatalf("liveness = %+v, want Failure via ebpf with the output and three runs", ps)
	}
	if got := h.counter(probespec.Liveness, "failed", "app"); got != 3 {
		t.Fatalf("prober_probe_total{failed} = %v, want 3", got)
	}
	select {
	case ev := <-h.events:
		if ev.Reason != "Unhealthy" {
			t.Fatalf("event %+v, want Unhealthy", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no Unhealthy event")
	}
}

func TestTCPProbesNotAnsweredFromMemoryGoToARunner(t *testing.T) {
	tcp := newInstantTCP(map[int]answer{livePort: success})
	h := newHarness(t, prober.WithTCPProber(tcp))
	h.update(testPod("c1", probespec.ContainerProbes{
		Readiness: tcpProbe(readyPort, withPeriod(1)),
		Liveness:  tcpProbe(livePort, withPeriod(1)),
	}))
	h.step(time.Second)
	if got := tcp.count(readyPort); got != 2 {
		t.Fatalf("readiness dialed %d times, want 2 (memory has no answer for it)", got)
	}
	if got := tcp.instantCount(readyPort); got != 0 {
		t.Fatalf("readiness answered from memory %d times", got)
	}
	h.wantResult("c1", probespec.Readiness, results.Success)
	h.wantResult("c1", probespec.Liveness, results.Success)
}

// waitAnswered waits for an answer from memory for port.
func (f *instantTCP) waitAnswered(t *testing.T, port int) {
	t.Helper()
	select {
	case p := <-f.answered:
		if p != port {
			t.Fatalf("answered port %d from memory, want %d", p, port)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer from memory")
	}
}

// probeStatus is container id's probe t.
func (h *harness) probeStatus(id string, t probespec.Type) prober.ProbeStatus {
	h.t.Helper()
	st, ok := h.m.Container(id)
	if !ok {
		h.t.Fatalf("container %s unknown", id)
	}
	return st.Probes[t]
}
