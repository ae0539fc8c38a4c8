package prober_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/spec"
)

// coalesceBound is the most a probe may move off its period grid so that
// it shares a wake-up: 10 ms, or 1% of the period when that is more. The
// engine uses 10 ms for every period.
const coalesceBound = 10 * time.Millisecond

// phasedPods adds one pod per offset, each with a readiness probe every
// second on its own port (readyPort+i), whose first probe the start-up
// jitter places at epoch+offset: the agent started with the clock, so
// every worker waits its jitter share of the period first.
func phasedPods(t *testing.T, offsets []time.Duration) *harness {
	t.Helper()
	i := 0
	jitter := func() float64 {
		f := float64(offsets[i]) / float64(time.Second)
		i++
		return f
	}
	h := newHarness(t, prober.WithAgentStartTime(epoch), prober.WithJitter(jitter))
	for j := range offsets {
		pod := testPod(fmt.Sprintf("c%d", j), spec.ContainerProbes{Readiness: tcpProbe(readyPort+j, withPeriod(1))})
		pod.UID, pod.Name = fmt.Sprintf("uid-%d", j), fmt.Sprintf("web-%d", j)
		h.update(pod)
	}
	return h
}

// stepTo advances the fake clock to epoch+at and settles.
func (h *harness) stepTo(at time.Duration) {
	h.t.Helper()
	h.clock.SetTime(epoch.Add(at))
	h.settle()
}

// counts returns the probes run so far on ports readyPort.. readyPort+n-1.
func (h *harness) counts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = h.tcp.count(readyPort + i)
	}
	return out
}

func TestProbesDueWithinTheCoalescingBoundShareAWakeUp(t *testing.T) {
	// Grid points 500, 508 (within the bound of 500), 511 and 520 ms.
	h := phasedPods(t, []time.Duration{500 * time.Millisecond, 508 * time.Millisecond, 511 * time.Millisecond, 520 * time.Millisecond})
	h.stepTo(499 * time.Millisecond)
	if got := h.counts(4); fmt.Sprint(got) != "[0 0 0 0]" {
		t.Fatalf("before the first grid point: %v, want nothing (no probe runs late, none more than the bound early)", got)
	}
	h.stepTo(500 * time.Millisecond)
	if got := h.counts(4); fmt.Sprint(got) != "[1 1 0 0]" {
		t.Fatalf("at 500ms: %v, want the 500 and 508 ms probes (8 ms early), not 511 (beyond the bound)", got)
	}
	for _, i := range []int{0, 1} {
		if at := h.lastProbe(fmt.Sprintf("c%d", i)); !at.Equal(epoch.Add(500 * time.Millisecond)) {
			t.Fatalf("c%d probed at %v, want at the shared wake-up", i, at.Sub(epoch))
		}
	}
	h.stepTo(511 * time.Millisecond)
	if got := h.counts(4); fmt.Sprint(got) != "[1 1 1 1]" {
		t.Fatalf("at 511ms: %v, want the 511 ms probe and the 520 ms one with it", got)
	}
}

func TestACoalescedProbeKeepsItsPeriodGrid(t *testing.T) {
	h := phasedPods(t, []time.Duration{500 * time.Millisecond, 508 * time.Millisecond})
	for k := range 5 {
		period := time.Duration(k) * time.Second
		h.stepTo(period + 499*time.Millisecond)
		if got := h.counts(2); got[0] != k || got[1] != k {
			t.Fatalf("period %d, 1 ms before the first grid point: %v, want %d each", k, got, k)
		}
		h.stepTo(period + 500*time.Millisecond)
		if got := h.counts(2); got[0] != k+1 || got[1] != k+1 {
			t.Fatalf("period %d at the first grid point: %v, want %d each (the second 8 ms early, every period)", k, got, k+1)
		}
		// The early probe moved off its grid point by 8 ms, within the
		// bound, and its next one is a whole period after its grid point,
		// not after the early run.
		if moved := epoch.Add(period + 508*time.Millisecond).Sub(h.lastProbe("c1")); moved < 0 || moved > coalesceBound {
			t.Fatalf("period %d: the probe moved %v off its grid point, want at most %v", k, moved, coalesceBound)
		}
	}
}

func TestAProbeTickingEarlyIsDecidedAsOfItsGridPoint(t *testing.T) {
	// Worker 0's grid point is epoch+1s, when its container's 1 s initial
	// delay has passed; worker 1 wakes the scheduler 5 ms before.
	offsets := []time.Duration{0, 995 * time.Millisecond}
	i := 0
	jitter := func() float64 {
		f := float64(offsets[i]) / float64(time.Second)
		i++
		return f
	}
	h := newHarness(t, prober.WithAgentStartTime(epoch), prober.WithJitter(jitter))
	delayed := testPod("c0", spec.ContainerProbes{Readiness: tcpProbe(readyPort, withPeriod(1), withInitialDelay(1))})
	h.update(delayed) // in its delay at once: no probe
	other := testPod("c1", spec.ContainerProbes{Readiness: tcpProbe(readyPort+1, withPeriod(1))})
	other.UID, other.Name = "uid-2", "web-2"
	h.update(other)
	h.stepTo(995 * time.Millisecond)
	if got := h.counts(2); fmt.Sprint(got) != "[1 1]" {
		t.Fatalf("at 995ms: %v, want both: the delayed probe's grid point (1 s) is past its delay", got)
	}
	h.stepTo(time.Second)
	if got := h.counts(2); fmt.Sprint(got) != "[1 1]" {
		t.Fatalf("at 1s: %v, want no second run for the grid point already probed", got)
	}
}

// lastProbe is when the readiness probe of container id last ran.
func (h *harness) lastProbe(id string) time.Time {
	h.t.Helper()
	st, ok := h.m.Container(id)
	if !ok {
		h.t.Fatalf("container %s unknown", id)
	}
	return st.Probes[probe.Readiness].LastProbeTime
}
