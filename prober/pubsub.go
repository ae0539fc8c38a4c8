package prober

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// fanout delivers values to buffered subscriber channels without ever
// blocking the publisher: a full subscriber loses the value, counted.
type fanout[T any] struct {
	mu      sync.RWMutex
	subs    map[uint64]chan T
	next    uint64
	closed  bool
	dropped prometheus.Counter
}

func newFanout[T any](dropped prometheus.Counter) *fanout[T] {
	return &fanout[T]{subs: make(map[uint64]chan T), dropped: dropped}
}

// subscribe returns a channel with the given buffer and a cancel that
// closes it; cancel is idempotent. After close the channel is closed at once.
func (f *fanout[T]) subscribe(buffer int) (<-chan T, func()) {
	ch := make(chan T, max(buffer, 0))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		close(ch)
		return ch, func() {}
	}
	id := f.next
	f.next++
	f.subs[id] = ch
	return ch, func() { f.cancel(id) }
}

func (f *fanout[T]) cancel(id uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.subs[id]; ok {
		delete(f.subs, id)
		close(ch)
	}
}

// publish offers v to every subscriber.
func (f *fanout[T]) publish(v T) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, ch := range f.subs {
		select {
		case ch <- v:
		default:
			f.dropped.Inc()
		}
	}
}

// close closes every subscription; later subscriptions get closed channels.
func (f *fanout[T]) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, ch := range f.subs {
		delete(f.subs, id)
		close(ch)
	}
	f.closed = true
}

// SubscribeResults implements StatusSource.
func (m *Manager) SubscribeResults(buffer int) (<-chan ResultChange, func()) {
	return m.changes.subscribe(buffer)
}

// SubscribeEvents implements StatusSource.
func (m *Manager) SubscribeEvents(buffer int) (<-chan Event, func()) {
	return m.events.subscribe(buffer)
}
