package server

import (
	"sync"

	"github.com/probelet/probelet/prober"
)

// eventLog retains the most recent probe events (the StatusSource only
// streams them) and fans new ones out to followers without ever blocking.
type eventLog struct {
	mu        sync.Mutex
	ring      []prober.Event
	next      int
	full      bool
	followers map[chan prober.Event]struct{}
	dropped   uint64
}

func newEventLog(size int) *eventLog {
	return &eventLog{ring: make([]prober.Event, size), followers: map[chan prober.Event]struct{}{}}
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

func (l *eventLog) add(ev prober.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.next] = ev
	l.next = (l.next + 1) % len(l.ring)
	l.full = l.full || l.next == 0
	for ch := range l.followers {
		select {
		case ch <- ev:
		default:
			l.dropped++
		}
	}
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
// subscription to every later one: nothing is missed or repeated.
func (l *eventLog) follow(buffer int) ([]prober.Event, <-chan prober.Event, func()) {
	ch := make(chan prober.Event, buffer)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.followers[ch] = struct{}{}
	var once sync.Once
	cancel := func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			delete(l.followers, ch)
		})
	}
	return l.snapshotLocked(), ch, cancel
}
