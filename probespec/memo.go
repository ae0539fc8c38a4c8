package probespec

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/lru"
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
	// List is every problem, in ErrorList order, naming no pod (the value
	// may be shared by several); ErrorList.For names one.
	List ErrorList
}

func newParsed(value string, probes PodProbes, errs ErrorList) *Parsed {
	return &Parsed{Value: value, Probes: probes, Errors: errs.ByContainer(), List: errs}
}

// ErrorFor is why container name has no probes: its own problems, or the
// annotation's when the value as a whole was rejected; "" when none.
func (p *Parsed) ErrorFor(name string) string {
	if msg, ok := p.Errors[name]; ok {
		return msg
	}
	return p.Errors[PodWide]
}

// ForPod applies to p the checks that need the pod's spec — every
// annotated container exists, named ports resolve — through the policy
// Check applies for `probelet validate`, so the node rejects what
// validate rejects. It returns p itself when podSpec is nil or nothing
// more is wrong, else a new Parsed of the pod's own.
func (p *Parsed) ForPod(podSpec *corev1.PodSpec) *Parsed {
	if podSpec == nil || len(CheckPod(PodRef{}, p.Probes, podSpec)) == 0 {
		return p
	}
	probes, errs := applyPolicy(PodRef{}, p.Value, p.Probes, p.List, podSpec)
	return newParsed(p.Value, probes, errs)
}

// Memo parses each distinct annotation value once. The replicas of a
// workload share one value, so a node of a hundred pods parses a handful.
// It keeps the most recently used values up to a bound in bytes (each
// value and an estimate of its parse), so pods with large, distinct
// annotations cannot grow it. Safe for concurrent use.
type Memo struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	values   *lru.Cache // value → *Parsed
}

// NewMemo returns a memo that keeps parsed values worth at most maxBytes;
// a value costlier than that alone is parsed every time.
func NewMemo(maxBytes int) *Memo {
	m := &Memo{maxBytes: maxBytes}
	m.values = lru.NewWithEvictionFunc(0, func(_ lru.Key, v any) { m.bytes -= cost(v.(*Parsed)) })
	return m
}

// Parse returns value parsed like Parse does, from the memo when it was
// parsed before. The empty value (no annotation) parses to no probes.
func (m *Memo) Parse(value string) *Parsed {
	if value == "" {
		return &noProbes
	}
	m.mu.Lock()
	if v, ok := m.values.Get(value); ok {
		m.mu.Unlock()
		return v.(*Parsed)
	}
	m.mu.Unlock()
	// Parse outside the lock: callers with other values need not wait. Two
	// callers with the same new value may both parse it; the result is the
	// same either way.
	probes, errs := Parse(PodRef{}, value)
	p := newParsed(value, probes, errs)
	c := cost(p)
	if c > m.maxBytes {
		return p
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.values.Get(value); ok {
		return v.(*Parsed)
	}
	m.values.Add(value, p)
	m.bytes += c
	for m.bytes > m.maxBytes {
		m.values.RemoveOldest()
	}
	return p
}

// Len reports how many values the memo holds.
func (m *Memo) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.values.Len()
}

// Bytes reports what the memo holds, as it counts it.
func (m *Memo) Bytes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// perContainerBytes is about what one container's three parsed probes
// take beside the strings they share with the value.
const perContainerBytes = 2 << 10

// cost estimates the memory a parsed value holds: the value (the key), the
// strings decoded from it (at most as long again), the probe structs and
// the error texts.
func cost(p *Parsed) int {
	n := 2*len(p.Value) + perContainerBytes*len(p.Probes)
	for _, msg := range p.Errors {
		n += 2 * len(msg)
	}
	return n
}

// noProbes is what a pod without the annotation has.
var noProbes = Parsed{}
