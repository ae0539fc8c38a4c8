package server

import (
	"sync"

	"github.com/probelet/probelet/internal/fanout"
	"github.com/probelet/probelet/prober"
)

// eventLog retains the most recent probe events (the StatusSource only
// streams them) and fans new ones out to followers without ever blocking.
type eventLog struct {
	mu        sync.Mutex
	ring      []prober.Event
	next      int
	full      bool
	followers *fanout.Hub[prober.Event]
}

func newEventLog(size int) *eventLog {
	return &eventLog{ring: make([]prober.Event, size), followers: fanout.New[prober.Event](nil)}
}

// run records events from src until done is closed or src closes.
func (l *eventLog) run(done <-chan struct{}, src <-chan prober.Event) {
	for {
		select {
		case <-done:
			return
		case ev, ok := <-src:
			if !ok {
				return
			}
			l.add(ev)
		}
	}
}

// add retains ev and hands it to the followers; both under l.mu, so a
// follow sees each event exactly once, in the backlog or on its channel.
func (l *eventLog) add(ev prober.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.next] = ev
	l.next = (l.next + 1) % len(l.ring)
	l.full = l.full || l.next == 0
	l.followers.Publish(ev)
}

// snapshotLocked returns the retained events, oldest first.
func (l *eventLog) snapshotLocked() []prober.Event {
	if !l.full {
		return append([]prober.Event(nil), l.ring[:l.next]...)
	}
	return append(append([]prober.Event(nil), l.ring[l.next:]...), l.ring[:l.next]...)
}

// snapshot returns the retained events, oldest first.
func (l *eventLog) snapshot() []prober.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snapshotLocked()
}

// follow returns the retained events and, atomically with them, a
// subscription to every later one (fanout's contract: a full buffer loses
// events, counted): nothing is missed or repeated.
func (l *eventLog) follow(buffer int) ([]prober.Event, <-chan prober.Event, func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch, cancel := l.followers.Subscribe(buffer)
	return l.snapshotLocked(), ch, cancel
}
