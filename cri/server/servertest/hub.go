package servertest

import "sync"

// hub is a publisher with the real sources' contract: buffered
// subscriptions, publishing never blocks, a lagging subscriber loses
// messages (counted), cancel closes the channel.
type hub[T any] struct {
	mu        sync.Mutex
	subs      map[int]chan T
	next      int
	dropped   uint64
	cancelled int
}

func (h *hub[T]) subscribe(buffer int) (<-chan T, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[int]chan T{}
	}
	id := h.next
	h.next++
	ch := make(chan T, buffer)
	h.subs[id] = ch
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[id]; ok {
			delete(h.subs, id)
			close(ch)
			h.cancelled++
		}
	}
}

// publish delivers v to every subscriber that has room and returns at once.
func (h *hub[T]) publish(v T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range h.subs {
		select {
		case ch <- v:
		default:
			h.dropped++
		}
	}
}

// stats returns the live subscriber count, drops and cancellations.
func (h *hub[T]) stats() (subscribers int, dropped uint64, cancelled int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs), h.dropped, h.cancelled
}

// closeAll ends every subscription, as a source that shuts down does.
func (h *hub[T]) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, ch := range h.subs {
		delete(h.subs, id)
		close(ch)
	}
}
