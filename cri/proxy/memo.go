package proxy

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultMaxAge bounds how long a memo entry is served even when no change
// was heard of: a safety net for a change nobody announces (a resource
// update made directly on containerd's socket), not the mechanism that keeps
// answers fresh. At the kubelet's 1 s relist it still spares containerd nine
// list calls in ten on a quiet node.
const DefaultMaxAge = 10 * time.Second

// memo holds containerd's last answer per request, keyed by the method and
// the request's exact bytes, so filters, label selectors and verbose flags
// get only what containerd answered to that very request.
//
// Ordering: every invalidation bumps gen. A read notes gen before it asks
// containerd and stores the answer only if gen is unchanged when it comes
// back, so an answer that was in flight while a change was announced is
// served once (it is what containerd said) but never kept.
//
// Answers are stored only while the runtime's own event stream is
// connected (live): containerd announces a change on that stream after its
// store reflects it (a sandbox's removal aside: see removing), which
// closes the window where an NRI event (sent before containerd updates its
// store) is followed by a read of the old state.
type memo struct {
	clock  clock.PassiveClock
	maxAge time.Duration

	mu      sync.Mutex
	gen     uint64
	live    bool
	entries map[string]*entry
	// byID indexes status entries by the full sandbox or container ID in
	// the answer (a request may name an ID prefix).
	byID map[string]map[string]bool
	// removing holds sandboxes whose removal containerd announced before
	// its store dropped them (containerd 2.x sends a sandbox's
	// CONTAINER_DELETED event, then calls NRI, then forgets it): nothing
	// about them, and no list, is kept until the announcer sees them gone.
	removing map[string]bool
}

// entry is one stored answer.
type entry struct {
	resp []byte
	at   time.Time
	id   string // the status answer's full ID; empty for lists
	// dropped is closed when the entry leaves the memo.
	dropped chan struct{}
}

func newMemo(clk clock.PassiveClock, maxAge time.Duration) *memo {
	return &memo{clock: clk, maxAge: maxAge, entries: map[string]*entry{}, byID: map[string]map[string]bool{},
		removing: map[string]bool{}}
}

func memoKey(method string, req []byte) string { return method + "\x00" + string(req) }

// get returns the stored answer for key, or false.
func (m *memo) get(key string) (*entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return nil, false
	}
	if m.clock.Since(e.at) >= m.maxAge {
		m.drop(key, e)
		return nil, false
	}
	return e, true
}

// begin returns the generation a read starts at.
func (m *memo) begin() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen
}

// put stores resp for key if nothing changed since gen, the runtime's
// event stream is live and the answer cannot show a sandbox being
// removed; id is a status answer's full ID.
func (m *memo) put(key string, resp []byte, id string, gen uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != m.gen || !m.live || m.removing[id] || (id == "" && len(m.removing) > 0) {
		return false
	}
	if old, ok := m.entries[key]; ok {
		m.drop(key, old)
	}
	e := &entry{resp: resp, at: m.clock.Now(), id: id, dropped: make(chan struct{})}
	m.entries[key] = e
	if id != "" {
		keys := m.byID[id]
		if keys == nil {
			keys = map[string]bool{}
			m.byID[id] = keys
		}
		keys[key] = true
	}
	return true
}

// drop removes one entry; m.mu is held.
func (m *memo) drop(key string, e *entry) {
	delete(m.entries, key)
	close(e.dropped)
	if e.id == "" {
		return
	}
	if keys := m.byID[e.id]; keys != nil {
		delete(keys, key)
		if len(keys) == 0 {
			delete(m.byID, e.id)
		}
	}
}

// invalidate drops every list answer and the status answers of ids: a
// change to one sandbox or container can change any list.
func (m *memo) invalidate(ids ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.invalidateLocked(ids...)
}

func (m *memo) invalidateLocked(ids ...string) {
	m.gen++
	for key, e := range m.entries {
		if e.id == "" {
			m.drop(key, e)
		}
	}
	for _, id := range ids {
		for key := range m.byID[id] {
			m.drop(key, m.entries[key])
		}
	}
}

// removalStarted is containerd announcing id's removal: what the memo
// holds about it goes, and nothing that can show it is kept until
// removalDone.
func (m *memo) removalStarted(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removing[id] = true
	m.invalidateLocked(id)
}

// removalDone is containerd no longer showing id (or the announcer giving
// up on it): answers are kept again, but none from a read that began
// while containerd might still show it.
func (m *memo) removalDone(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.removing[id] {
		delete(m.removing, id)
		m.invalidateLocked(id)
	}
}

// flush drops everything.
func (m *memo) flush() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.flushLocked()
}

func (m *memo) flushLocked() {
	m.gen++
	for _, e := range m.entries {
		close(e.dropped)
	}
	clear(m.entries)
	clear(m.byID)
}

// setLive records whether the runtime's event stream is connected; any
// change flushes the memo (what happened while it was down is unknown).
func (m *memo) setLive(live bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live != live {
		m.live = live
		m.flushLocked()
	}
}
