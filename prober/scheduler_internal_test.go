package prober

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/internal/testutil"
)

func TestNextTickStaysOnThePeriodGrid(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := 10 * time.Second
	cases := []struct {
		name string
		now  time.Duration // after t0
		want time.Duration
	}{
		{"on time", 0, 10 * time.Second},
		{"a probe that took 3s", 3 * time.Second, 10 * time.Second},
		{"overran by a bit: one catch-up at once", 12 * time.Second, 10 * time.Second},
		{"overran several periods: still one catch-up", 47 * time.Second, 40 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextTick(t0, p, t0.Add(tc.now)); !got.Equal(t0.Add(tc.want)) {
				t.Fatalf("nextTick = +%v, want +%v", got.Sub(t0), tc.want)
			}
		})
	}
}

func TestDueQueueYieldsLiveEntriesInDueOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	q := dueQueue{base: t0}
	at := func() time.Time { return t0.Add(time.Duration(rng.IntN(1000)) * time.Millisecond) }
	var live []*worker
	for range 500 {
		w := &worker{due: at()}
		q.push(w)
		live = append(live, w)
	}
	for i := range 300 {
		w := live[rng.IntN(len(live))]
		if i%3 != 0 { // reschedule: the old entry goes stale
			w.due = at()
			q.push(w)
			continue
		}
		q.forget(w)
		q.forget(w) // forgetting twice is a no-op
		live = slices.DeleteFunc(live, func(x *worker) bool { return x == w })
	}
	var last time.Time
	seen := map[*worker]bool{}
	for {
		w, due, ok := q.next()
		if !ok {
			break
		}
		if got := q.take(); got != w || !due.Equal(w.due) || due.Before(last) || seen[w] {
			t.Fatalf("took %p due %v after %v (want %p due %v, seen %v)", got, due, last, w, w.due, seen[w])
		}
		seen[w], last = true, due
	}
	if len(seen) != len(live) {
		t.Fatalf("yielded %d workers, want the %d live ones", len(seen), len(live))
	}
}

func TestPoolBoundsRunnersAndClosesThem(t *testing.T) {
	var running, peak atomic.Int32
	release := make(chan struct{})
	var done sync.WaitGroup
	p := newPool(3, func(*worker) {
		n := running.Add(1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		<-release
		running.Add(-1)
		done.Done()
	})
	// Probes that never look long: the bound is for work that runs, not
	// for probes waiting on their targets (TestPoolDoesNotQueueBehind...).
	fixed := time.Now()
	p.now = func() time.Time { return fixed }
	done.Add(10)
	for range 10 {
		p.submit(&worker{})
	}
	close(release)
	done.Wait()
	done.Add(1)
	p.submit(&worker{}) // a parked runner takes it
	if n := p.runners(); n != 3 {
		t.Fatalf("runners = %d after 10 probes at once, want the bound 3, kept parked", n)
	}
	p.close()
	if peak.Load() > 3 {
		t.Fatalf("peak runners = %d, want at most 3", peak.Load())
	}
	if p.active != 0 || p.head != len(p.queue) {
		t.Fatalf("pool not drained: %d runners, %d queued", p.active, len(p.queue)-p.head)
	}
}

// A probe that waits on its target costs its own runner, not the node's
// pool: with every runner held by probes that hang, a probe queued behind
// them still runs (on a runner started when a hung one was detached), and
// the goroutines are the bound plus the hung probes, nothing more.
func TestPoolDoesNotQueueBehindProbesThatHang(t *testing.T) {
	ran := make(chan *worker, 16)
	var hanging sync.Map // *worker → the channel it hangs on
	p := newPool(2, func(w *worker) {
		if c, ok := hanging.Load(w); ok {
			<-c.(chan struct{})
		}
		ran <- w
	})
	tests := []struct {
		name   string
		hangs  int // probes hanging before the victim's
		bounds int // runner goroutines while they hang, the victim's done
	}{
		{name: "fewer than the bound", hangs: 1, bounds: 2},
		{name: "as many as the bound", hangs: 2, bounds: 3},
		{name: "many more than the bound", hangs: 6, bounds: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hang := make(chan struct{})
			release := sync.OnceFunc(func() { close(hang) })
			defer release() // a failed check must not leave the pool's close waiting
			var hung []*worker
			for range tt.hangs {
				w := &worker{}
				hanging.Store(w, hang)
				hung = append(hung, w)
			}
			victim := &worker{}
			for _, w := range hung {
				p.submit(w)
			}
			p.submit(victim)
			if got := <-ran; got != victim { // only the victim can finish
				t.Fatalf("ran %p, want the victim", got)
			}
			if n := p.runners(); n > tt.bounds {
				t.Fatalf("%d runner goroutines with %d probes hanging, want at most %d", n, tt.hangs, tt.bounds)
			}
			release()
			for range hung {
				<-ran
			}
			testutil.WaitFor(t, "the detached runners to rejoin or exit", func() bool { return p.runners() <= 2 })
		})
	}
	p.close()
	if p.active != 0 || p.detached != 0 || len(p.attached) != 0 || p.waking != 0 {
		t.Fatalf("after close: %d attached, %d detached, %d slots, %d waking", p.active, p.detached, len(p.attached), p.waking)
	}
}

func TestHistoryKeepsTheNewestOldestFirst(t *testing.T) {
	h := newHistory(3)
	for i := range 5 {
		h.add(ProbeRecord{Output: string(rune('a' + i))})
	}
	var got string
	for _, r := range h.records() {
		got += r.Output
	}
	if got != "cde" {
		t.Fatalf("history = %q, want %q", got, "cde")
	}
	none := newHistory(0)
	none.add(ProbeRecord{})
	if len(none.records()) != 0 {
		t.Fatal("history 0 kept a record")
	}
}

// TestSchedulerRoundTicksWhatIsDue: a round ticks every worker due by now
// or within coalesceWindow, in due order and as of its due time, and sets
// the alarm for the first one left; the scheduler counts as idle only
// while nothing is due.
func TestSchedulerRoundTicksWhatIsDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	s := newScheduler(clk, func() float64 { return 0 }, t0.Add(-time.Hour), newPool(1, func(*worker) {}))
	s.start(nil)
	defer s.close()
	offsets := []time.Duration{time.Second, 11 * time.Millisecond, 0, coalesceWindow, -time.Second, 5 * time.Millisecond}
	byOffset := map[*worker]time.Duration{}
	for _, d := range offsets {
		w := &worker{period: time.Minute}
		byOffset[w] = d
		s.schedule(w, t0.Add(d))
	}
	var ticked []time.Duration
	s.beginRound(func(w *worker, at time.Time) {
		if want := later(t0, t0.Add(byOffset[w])); !at.Equal(want) {
			t.Errorf("worker due at %+v ticked as of %+v", byOffset[w], at.Sub(t0))
		}
		ticked = append(ticked, byOffset[w])
	})
	if w := s.endRound(); w != nil {
		t.Fatalf("the round kept %v to run inline, with nothing submitted", w)
	}
	want := []time.Duration{-time.Second, 0, 5 * time.Millisecond, coalesceWindow}
	if !slices.Equal(ticked, want) {
		t.Fatalf("ticked %v, want %v", ticked, want)
	}
	if next := time.Unix(0, s.nextRound.Load()); !next.Equal(t0.Add(11 * time.Millisecond)) {
		t.Fatalf("next round at +%v, want +11ms", next.Sub(t0))
	}
	if !s.idle() {
		t.Fatal("not idle with nothing due")
	}
	clk.Step(11 * time.Millisecond)
	if s.idle() {
		t.Fatal("idle with a worker due")
	}
	if lag, running := s.lag(); running || lag != 0 {
		t.Fatalf("lag %v, running %v outside run; want 0, not running", lag, running)
	}
}

// TestSchedulerFirstTickSpreadsAYoungAgentsProbes: while the agent is
// younger than a worker's period, its first tick is a random part of the
// period away (a broken random source counts as none); later, at once.
func TestSchedulerFirstTickSpreadsAYoungAgentsProbes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		age    time.Duration
		jitter float64
		want   time.Duration
	}{
		{"young agent", time.Second, 0.25, 2500 * time.Millisecond},
		{"young agent, broken jitter", time.Second, 1.5, 0},
		{"young agent, negative jitter", time.Second, -0.1, 0},
		{"agent older than the period", 10 * time.Second, 0.25, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler(clocktesting.NewFakeClock(t0), func() float64 { return tc.jitter }, t0.Add(-tc.age), newPool(1, func(*worker) {}))
			w := &worker{period: 10 * time.Second}
			s.scheduleFirst(w)
			if got := w.due.Sub(t0); got != tc.want {
				t.Fatalf("first tick at +%v, want +%v", got, tc.want)
			}
		})
	}
}

// TestSchedulerWakeRestartsThePeriod: wake makes an idle worker due now, a
// worker in flight due as soon as its probe ends, and a stopped one never.
func TestSchedulerWakeRestartsThePeriod(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	s := newScheduler(clk, func() float64 { return 0 }, t0.Add(-time.Hour), newPool(1, func(*worker) {}))
	idle := &worker{period: time.Minute, due: t0.Add(30 * time.Second)}
	inFlight := &worker{period: time.Minute, due: t0.Add(-time.Second), inFlight: true}
	stopped := &worker{period: time.Minute, stopped: true}
	clk.Step(2 * time.Second)
	for _, w := range []*worker{idle, inFlight, stopped} {
		s.wake(w)
	}
	if !idle.due.Equal(clk.Now()) || !idle.queued {
		t.Errorf("idle worker due at +%v (queued %v), want now", idle.due.Sub(t0), idle.queued)
	}
	if inFlight.queued || !inFlight.rewake {
		t.Errorf("worker in flight queued %v, rewake %v; want it marked to tick when its probe ends", inFlight.queued, inFlight.rewake)
	}
	inFlight.inFlight = false
	s.reschedule(inFlight)
	if !inFlight.due.Equal(clk.Now()) || inFlight.rewake {
		t.Errorf("woken worker rescheduled at +%v (rewake %v), want now", inFlight.due.Sub(t0), inFlight.rewake)
	}
	if stopped.queued {
		t.Error("a stopped worker was queued")
	}
}
