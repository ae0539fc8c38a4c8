package prober_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/probespec"
)

// coalesceBound is the most a probe may move off its period grid so that
// it shares a wake-up: 10 ms, or 1% of the period when that is more
// (boundFor). The engine uses 10 ms for every period.
const coalesceBound = 10 * time.Millisecond

// boundFor is the coalescing bound for a probe of the given period.
func boundFor(period time.Duration) time.Duration {
	return max(coalesceBound, period/100)
}

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
		pod := testPod(fmt.Sprintf("c%d", j), probespec.ContainerProbes{Readiness: tcpProbe(readyPort+j, withPeriod(1))})
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
	delayed := testPod("c0", probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withPeriod(1), withInitialDelay(1))})
	h.update(delayed) // in its delay at once: no probe
	other := testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort+1, withPeriod(1))})
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
	return st.Probes[probespec.Readiness].LastProbeTime
}

// coalescedWorker is one readiness probe of a bound test: added at addAt,
// every period; while the agent is younger than the period its first probe
// waits jitter (a fraction exact in binary, so the grid is exact) of it.
type coalescedWorker struct {
	period time.Duration
	addAt  time.Duration
	jitter float64
}

// firstDue is where w's period grid starts: the kubelet's rules, first
// probe at once unless the agent is younger than one period.
func (w coalescedWorker) firstDue(agentAge time.Duration) time.Duration {
	if agentAge+w.addAt < w.period {
		return w.addAt + time.Duration(w.jitter*float64(w.period))
	}
	return w.addAt
}

func TestCoalescingMovesNoProbeBeyondTheBound(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name     string
		agentAge time.Duration // at epoch
		workers  []coalescedWorker
		until    time.Duration
		// wantMoved is whether some probe must run off its grid point: the
		// case has probes close enough to share a wake-up.
		wantMoved bool
	}{
		{
			name:     "1 s probes 8 ms apart share every wake-up",
			agentAge: 0,
			workers:  []coalescedWorker{{time.Second, 0, 0.5}, {time.Second, 8 * ms, 0.5}},
			until:    5 * time.Second, wantMoved: true,
		},
		{
			name:     "11 ms apart: beyond the window, nothing moves",
			agentAge: 0,
			workers:  []coalescedWorker{{time.Second, 0, 0.5}, {time.Second, 11 * ms, 0.5}},
			until:    5 * time.Second, wantMoved: false,
		},
		{
			name:     "a chain 5 ms apart: no probe is carried further than the window",
			agentAge: 0,
			workers: []coalescedWorker{{time.Second, 0, 0.5}, {time.Second, 5 * ms, 0.5}, {time.Second, 10 * ms, 0.5},
				{time.Second, 15 * ms, 0.5}, {time.Second, 20 * ms, 0.5}, {time.Second, 25 * ms, 0.5}},
			until: 4 * time.Second, wantMoved: true,
		},
		{
			name:     "periods 1, 2 and 4 s meeting every few periods",
			agentAge: 0,
			workers: []coalescedWorker{{time.Second, 0, 0.25}, {2 * time.Second, 4 * ms, 0.125},
				{4 * time.Second, 9 * ms, 0.0625}, {4 * time.Second, 0, 0.75}},
			until: 13 * time.Second, wantMoved: true,
		},
		{
			name:     "agent older than every period: each first probe at once, later ones share wake-ups",
			agentAge: time.Hour,
			workers:  []coalescedWorker{{time.Second, 0, 0}, {time.Second, 5 * ms, 0}, {time.Second, 30 * ms, 0}, {3 * time.Second, 38 * ms, 0}},
			until:    7 * time.Second, wantMoved: true,
		},
		{
			name:     "64 s probes: 10 ms, well under 1% of the period",
			agentAge: 0,
			workers:  []coalescedWorker{{64 * time.Second, 0, 0.5}, {64 * time.Second, 7 * ms, 0.5}},
			until:    3 * 64 * time.Second, wantMoved: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runs := coalescedRuns(t, tc.agentAge, tc.workers, tc.until)
			moved := 0
			for i, w := range tc.workers {
				first := w.firstDue(tc.agentAge)
				// Once per grid point by until; one more when a grid point
				// just after until may have run early.
				want := int((tc.until-first)/w.period) + 1
				early := int((tc.until+boundFor(w.period)-first)/w.period) + 1
				if n := len(runs[i]); n < want || n > early {
					t.Fatalf("worker %d ran %d times by %v, want %d, once per grid point from %v: %v", i, n, tc.until, want, first, runs[i])
				}
				for k, at := range runs[i] {
					grid := first + time.Duration(k)*w.period
					switch d := grid - at; {
					case d < 0:
						t.Errorf("worker %d, run %d: at %v, %v after its grid point %v (nothing may run late)", i, k, at, -d, grid)
					case d > boundFor(w.period):
						t.Errorf("worker %d, run %d: at %v, %v before its grid point %v, beyond the bound %v", i, k, at, d, grid, boundFor(w.period))
					case k == 0 && first == w.addAt && d != 0:
						t.Errorf("worker %d: first probe at %v, want at once (%v)", i, at, w.addAt)
					case d > 0:
						moved++
					}
				}
			}
			if got := moved > 0; got != tc.wantMoved {
				t.Errorf("%d probes ran off their grid point, want some: %v", moved, tc.wantMoved)
			}
		})
	}
}

// coalescedRuns adds the workers at their times and steps the fake clock
// through every grid point until `until` (as the scheduler's alarm would
// wake: at the earliest due time), returning each worker's probe times
// relative to epoch.
func coalescedRuns(t *testing.T, agentAge time.Duration, workers []coalescedWorker, until time.Duration) [][]time.Duration {
	t.Helper()
	var jitter float64
	h := newHarness(t, prober.WithAgentStartTime(epoch.Add(-agentAge)),
		prober.WithJitter(func() float64 { return jitter }))
	var stops []time.Duration
	for _, w := range workers {
		stops = append(stops, w.addAt)
		for at := w.firstDue(agentAge); at <= until; at += w.period {
			stops = append(stops, at)
		}
	}
	slices.Sort(stops)
	stops = slices.Compact(stops)
	runs := make([][]time.Duration, len(workers))
	for _, at := range stops {
		h.stepTo(at)
		for i, w := range workers {
			if w.addAt != at {
				continue
			}
			jitter = w.jitter
			pod := testPod(fmt.Sprintf("c%d", i), probespec.ContainerProbes{Readiness: tcpProbe(readyPort+i, withPeriod(int32(w.period/time.Second)))})
			pod.UID, pod.Name = fmt.Sprintf("uid-%d", i), fmt.Sprintf("web-%d", i)
			h.update(pod)
		}
		for i, n := range h.counts(len(workers)) {
			switch {
			case n == len(runs[i])+1:
				runs[i] = append(runs[i], h.lastProbe(fmt.Sprintf("c%d", i)).Sub(epoch))
			case n != len(runs[i]):
				t.Fatalf("worker %d ran %d times at once at %v", i, n-len(runs[i]), at)
			}
		}
	}
	return runs
}
