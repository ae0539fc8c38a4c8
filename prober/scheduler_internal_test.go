package prober

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

func TestDueQueuePopsInDueOrderThroughFixesAndRemovals(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	var q dueQueue
	var live []*worker
	for range 500 {
		w := &worker{index: -1, due: t0.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)}
		q.push(w)
		live = append(live, w)
	}
	for i := 0; i < 200; i++ {
		w := live[rng.IntN(len(live))]
		if i%2 == 0 {
			w.due = t0.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
			q.fix(w.index)
			continue
		}
		q.remove(w)
		q.remove(w) // removing twice is a no-op
		live = slices.DeleteFunc(live, func(x *worker) bool { return x == w })
	}
	if q.Len() != len(live) {
		t.Fatalf("Len = %d, want %d", q.Len(), len(live))
	}
	var last time.Time
	for q.Len() > 0 {
		w := q.pop()
		if w.due.Before(last) || w.index != -1 {
			t.Fatalf("popped due %v after %v (index %d)", w.due, last, w.index)
		}
		last = w.due
	}
}

func TestPoolBoundsRunnersAndRetiresThem(t *testing.T) {
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
	done.Add(10)
	for range 10 {
		p.submit(&worker{})
	}
	close(release)
	done.Wait()
	p.wait()
	if peak.Load() > 3 {
		t.Fatalf("peak runners = %d, want at most 3", peak.Load())
	}
	if p.active != 0 || len(p.queue) != 0 {
		t.Fatalf("pool not drained: active %d, queued %d", p.active, len(p.queue))
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
