// Package fanout is probelet's one publish/subscribe primitive: the engine's
// result changes and probe events, the node cache's lifecycle events and the
// socket's event log all fan out through it.
//
// The contract: Publish never blocks. Each subscriber has its own buffer of
// at least one value; a subscriber whose buffer is full when a value is
// published loses that value, and the loss is counted (Dropped, and the
// drop callback, e.g. a Prometheus counter). Cancel and Close close the
// subscriber's channel exactly once; a subscription taken after Close gets
// a closed channel.
package fanout

import "sync"

// Hub fans values of type T out to subscribers. The zero value is not
// usable; call New. Safe for concurrent use.
type Hub[T any] struct {
	mu      sync.RWMutex
	subs    map[uint64]chan T
	next    uint64
	closed  bool
	onDrop  func()
	dropped uint64
	// cancelled counts subscriptions ended by their cancel func.
	cancelled int
}

// New returns a Hub; onDrop (may be nil) is called once per value a
// subscriber lost.
func New[T any](onDrop func()) *Hub[T] {
	return &Hub[T]{subs: map[uint64]chan T{}, onDrop: onDrop}
}

// Subscribe returns a channel buffered for buffer values (at least 1) and
// an idempotent cancel that closes it.
func (h *Hub[T]) Subscribe(buffer int) (<-chan T, func()) {
	ch := make(chan T, max(buffer, 1))
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(ch)
		return ch, func() {}
	}
	id := h.next
	h.next++
	h.subs[id] = ch
	return ch, func() { h.cancel(id) }
}

func (h *Hub[T]) cancel(id uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.subs[id]; ok {
		delete(h.subs, id)
		close(ch)
		h.cancelled++
	}
}

// Publish offers v to every subscriber and returns at once.
func (h *Hub[T]) Publish(v T) {
	h.mu.RLock()
	lost := 0
	for _, ch := range h.subs {
		select {
		case ch <- v:
		default:
			lost++
		}
	}
	h.mu.RUnlock()
	if lost > 0 {
		h.mu.Lock()
		h.dropped += uint64(lost)
		h.mu.Unlock()
		if h.onDrop != nil {
			for range lost {
				h.onDrop()
			}
		}
	}
}

// Active reports whether anyone listens, so publishers can skip building
// values nobody reads.
func (h *Hub[T]) Active() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs) > 0
}

// Close ends every subscription; later ones get a closed channel.
func (h *Hub[T]) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, ch := range h.subs {
		delete(h.subs, id)
		close(ch)
	}
	h.closed = true
}

// Stats reports live subscriptions, values lost to full buffers, and
// subscriptions ended by their cancel.
func (h *Hub[T]) Stats() (subscribers int, dropped uint64, cancelled int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs), h.dropped, h.cancelled
}

// Buffered reports the values published and not yet received, over every
// subscription (tests wait on it to know a subscriber caught up).
func (h *Hub[T]) Buffered() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for _, ch := range h.subs {
		n += len(ch)
	}
	return n
}
