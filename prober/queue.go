package prober

import "time"

// dueQueue is a min-heap of (due time, worker) entries. Entries carry their
// due time, so sifting touches only the heap's own array, not the workers
// (which matters with 10,000 workers: every worker visited is a cache
// miss). Rescheduling or stopping a worker does not search the heap: it
// bumps the worker's generation, and the stale entry is dropped when it
// surfaces. Guarded by Manager.mu.
type dueQueue struct {
	base  time.Time // due times are stored as offsets from base
	items []queued
}

// queued is one heap entry; it is live while gen matches its worker's.
type queued struct {
	due int64
	w   *worker
	gen uint32
}

// Len returns how many entries, live or stale, are queued.
func (q *dueQueue) Len() int { return len(q.items) }

// push queues w at w.due, making any earlier entry of w stale, and
// reports whether w is now first.
func (q *dueQueue) push(w *worker) bool {
	w.gen++
	w.queued = true
	q.items = append(q.items, queued{due: int64(w.due.Sub(q.base)), w: w, gen: w.gen})
	return q.up(len(q.items)-1) == 0
}

// forget makes w's entry stale.
func (q *dueQueue) forget(w *worker) {
	w.gen++
	w.queued = false
}

// next returns the earliest live entry's worker, dropping stale entries
// on the way; ok is false when nothing live is queued.
func (q *dueQueue) next() (w *worker, due time.Time, ok bool) {
	for len(q.items) > 0 {
		top := q.items[0]
		if top.w.queued && top.gen == top.w.gen {
			return top.w, q.base.Add(time.Duration(top.due)), true
		}
		q.pop()
	}
	return nil, time.Time{}, false
}

// take removes the earliest entry; the caller got it from next.
func (q *dueQueue) take() *worker {
	w := q.pop().w
	w.queued = false
	return w
}

func (q *dueQueue) pop() queued {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items[last] = queued{}
	q.items = q.items[:last]
	if last > 0 {
		q.down(0)
	}
	return top
}

func (q *dueQueue) up(i int) int {
	for i > 0 {
		parent := (i - 1) / 2
		if q.items[i].due >= q.items[parent].due {
			break
		}
		q.items[i], q.items[parent] = q.items[parent], q.items[i]
		i = parent
	}
	return i
}

func (q *dueQueue) down(i int) {
	n := len(q.items)
	for {
		child := 2*i + 1
		if child >= n {
			return
		}
		if r := child + 1; r < n && q.items[r].due < q.items[child].due {
			child = r
		}
		if q.items[i].due <= q.items[child].due {
			return
		}
		q.items[i], q.items[child] = q.items[child], q.items[i]
		i = child
	}
}
