package prober

// dueQueue is a min-heap of workers by due time. Each worker is in it at
// most once and knows its index, so waking or stopping one is O(log n).
// It is guarded by Manager.mu.
type dueQueue struct {
	items []*worker
}

// Len returns how many workers are scheduled.
func (q *dueQueue) Len() int { return len(q.items) }

// peek returns the earliest worker; the queue must not be empty.
func (q *dueQueue) peek() *worker { return q.items[0] }

// push schedules w at w.due.
func (q *dueQueue) push(w *worker) {
	w.index = len(q.items)
	q.items = append(q.items, w)
	q.up(w.index)
}

// pop removes and returns the earliest worker.
func (q *dueQueue) pop() *worker {
	w := q.items[0]
	q.remove(w)
	return w
}

// remove takes w out of the queue if it is in it.
func (q *dueQueue) remove(w *worker) {
	i := w.index
	if i < 0 || i >= len(q.items) || q.items[i] != w {
		return
	}
	last := len(q.items) - 1
	q.swap(i, last)
	q.items[last] = nil
	q.items = q.items[:last]
	w.index = -1
	if i < last {
		q.fix(i)
	}
}

// fix restores the order after the due time at index i changed.
func (q *dueQueue) fix(i int) {
	if !q.down(i) {
		q.up(i)
	}
}

func (q *dueQueue) less(i, j int) bool {
	return q.items[i].due.Before(q.items[j].due)
}

func (q *dueQueue) swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	q.items[i].index = i
	q.items[j].index = j
}

func (q *dueQueue) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			return
		}
		q.swap(i, parent)
		i = parent
	}
}

// down sifts i towards the leaves and reports whether it moved.
func (q *dueQueue) down(i int) bool {
	start, n := i, len(q.items)
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if r := child + 1; r < n && q.less(r, child) {
			child = r
		}
		if !q.less(child, i) {
			break
		}
		q.swap(i, child)
		i = child
	}
	return i > start
}
