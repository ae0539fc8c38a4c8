package spec

import (
	"container/list"
	"sync"
)

// Parsed is one annotation value, parsed: the probes of the containers
// that passed and, per container name, why the others were rejected.
// Values from a Memo are shared; readers must not modify them.
type Parsed struct {
	// Value is the annotation value this was parsed from.
	Value string
	// Probes are the valid containers' defaulted probes.
	Probes PodProbes
	// Errors maps a rejected container to its reasons (ErrorList.ByContainer);
	// PodWide holds why the value as a whole was rejected.
	Errors map[string]string
}

// ErrorFor is why container name has no probes: its own problems, or the
// annotation's when the value as a whole was rejected; "" when none.
func (p *Parsed) ErrorFor(name string) string {
	if msg, ok := p.Errors[name]; ok {
		return msg
	}
	return p.Errors[PodWide]
}

// Memo parses each distinct annotation value once. The replicas of a
// workload share one value, so a node of a hundred pods parses a handful;
// and the callers (the engine, on every pod update) need not keep their own
// copies. It keeps the most recently used values up to a bound. Safe for
// concurrent use.
type Memo struct {
	mu      sync.Mutex
	max     int
	lru     list.List // of *Parsed, most recent first
	byValue map[string]*list.Element
}

// NewMemo returns a memo that keeps at most size values (at least 1).
func NewMemo(size int) *Memo {
	return &Memo{max: max(size, 1), byValue: map[string]*list.Element{}}
}

// Parse returns value parsed like Parse does, from the memo when it was
// parsed before. The empty value (no annotation) parses to no probes.
func (m *Memo) Parse(value string) *Parsed {
	if value == "" {
		return &noProbes
	}
	m.mu.Lock()
	if e, ok := m.byValue[value]; ok {
		m.lru.MoveToFront(e)
		m.mu.Unlock()
		return e.Value.(*Parsed)
	}
	m.mu.Unlock()
	// Parse outside the lock: callers with other values need not wait. Two
	// callers with the same new value may both parse it; the result is the
	// same either way.
	probes, errs := Parse(PodRef{}, value)
	p := &Parsed{Value: value, Probes: probes, Errors: errs.ByContainer()}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.byValue[value]; ok {
		return e.Value.(*Parsed)
	}
	m.byValue[value] = m.lru.PushFront(p)
	for m.lru.Len() > m.max {
		oldest := m.lru.Back()
		m.lru.Remove(oldest)
		delete(m.byValue, oldest.Value.(*Parsed).Value)
	}
	return p
}

// Len reports how many values the memo holds.
func (m *Memo) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lru.Len()
}

// noProbes is what a pod without the annotation has.
var noProbes = Parsed{}
