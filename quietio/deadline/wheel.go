package deadline

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/probelet/probelet/quietio/timerfile"
)

// wheel ends timed contexts at their deadlines: a min-heap of the live
// ones and an alarm set to the earliest, re-set whenever the earliest
// changes, so that it goes off only for a deadline that passed with its
// context still live. Its goroutine waits on the alarm.
type wheel struct {
	mu    sync.Mutex
	heap  timedHeap
	alarm timerfile.Alarm
	// armed is the deadline the alarm is set for (zero: disarmed).
	armed time.Time
}

var (
	once   sync.Once
	shared *wheel
)

// theWheel is the process's wheel, started on first use; nil when no
// timer file could be made. Its timer file never refuses a setting (it
// stays open, and the values are valid); if the kernel ever did, the
// timerfile policy hands it to a Go timer and the wheel goes on.
func theWheel() *wheel {
	once.Do(func() {
		a, err := timerfile.Open("probe-deadlines", nil)
		if err != nil {
			return
		}
		shared = &wheel{alarm: a}
		go shared.run()
	})
	return shared
}

func (w *wheel) add(t *timed) {
	w.mu.Lock()
	defer w.mu.Unlock()
	heap.Push(&w.heap, t)
	w.rearm()
}

// remove takes t off the heap; false when it was not on it (the wheel
// ended it already).
func (w *wheel) remove(t *timed) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&w.heap, t.index)
	w.rearm()
	return true
}

// rearm points the alarm at the earliest deadline, or disarms it, when
// that changed. Called under the lock.
func (w *wheel) rearm() {
	if next := w.earliest(); !next.Equal(w.armed) {
		w.arm(next)
	}
}

// earliest is the first deadline on the heap, zero when it is empty.
func (w *wheel) earliest() time.Time {
	if len(w.heap) == 0 {
		return time.Time{}
	}
	return w.heap[0].deadline
}

// arm sets the alarm to next, or disarms it for zero.
func (w *wheel) arm(next time.Time) {
	w.armed = next
	if next.IsZero() {
		w.alarm.Disarm()
		return
	}
	w.alarm.Set(next)
}

// run ends the contexts whose deadlines passed each time the alarm goes
// off.
func (w *wheel) run() {
	for {
		w.alarm.Wait()
		for _, t := range w.due(time.Now()) {
			t.end(context.DeadlineExceeded)
		}
	}
}

// due takes the contexts due by now off the heap and re-arms the alarm.
func (w *wheel) due(now time.Time) []*timed {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*timed
	for len(w.heap) > 0 && !w.heap[0].deadline.After(now) {
		out = append(out, heap.Pop(&w.heap).(*timed))
	}
	// It went off: set or disarm it whatever it was (a timerfile alarm
	// stays due until then).
	w.arm(w.earliest())
	return out
}

// timedHeap orders live contexts by deadline.
type timedHeap []*timed

func (h timedHeap) Len() int           { return len(h) }
func (h timedHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h timedHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timedHeap) Push(x any) {
	t := x.(*timed)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timedHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
