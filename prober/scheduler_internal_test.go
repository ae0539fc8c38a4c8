package prober

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
