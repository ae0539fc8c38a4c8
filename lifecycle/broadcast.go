package lifecycle

import (
	"sync"

	"github.com/probelet/probelet/node"
	"github.com/prometheus/client_golang/prometheus"
)

// broadcaster fans lifecycle events out to subscribers without ever
// blocking the publisher: a full subscriber channel loses the event.
type broadcaster struct {
	mu      sync.Mutex
	subs    map[uint64]chan node.Event
	next    uint64
	dropped prometheus.Counter
}

func newBroadcaster(dropped prometheus.Counter) *broadcaster {
	return &broadcaster{subs: map[uint64]chan node.Event{}, dropped: dropped}
}

// subscribe returns a channel with the given buffer (at least 1) and an
// idempotent cancel that closes it.
func (b *broadcaster) subscribe(buffer int) (<-chan node.Event, func()) {
	if buffer < 1 {
		buffer = 1
	}
	ch := make(chan node.Event, buffer)
	b.mu.Lock()
	id := b.next
	b.next++
	b.subs[id] = ch
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, id)
			b.mu.Unlock()
			close(ch)
		})
	}
}

// active reports whether anyone listens, so callers can skip building events.
func (b *broadcaster) active() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs) > 0
}

// publish delivers ev to every subscriber that has room and counts the rest.
func (b *broadcaster) publish(ev node.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.subs {
		select {
		case ch <- ev:
		default:
			b.dropped.Inc()
		}
	}
}
