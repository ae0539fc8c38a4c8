// Package servertest provides fakes of the server's two data sources and
// helpers to run the server on a temporary socket, for the server's own
// tests and probectl's end-to-end tests.
package servertest

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/probelet/probelet/internal/fanout"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/probespec"
)

// Status is a fake prober.StatusSource whose publishers never block.
type Status struct {
	mu         sync.Mutex
	containers []prober.ContainerStatus
	specs      map[string]*probespec.Parsed
	results    *fanout.Hub[prober.ResultChange]
	events     *fanout.Hub[prober.Event]
}

var _ prober.StatusSource = (*Status)(nil)

// NewStatus returns a Status holding cs.
func NewStatus(cs ...prober.ContainerStatus) *Status {
	return &Status{containers: cs, results: newHub[prober.ResultChange](), events: newHub[prober.Event]()}
}

// Set replaces the container states.
func (s *Status) Set(cs ...prober.ContainerStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.containers = cs
}

// Containers implements prober.StatusSource.
func (s *Status) Containers() []prober.ContainerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.containers)
}

// Container implements prober.StatusSource.
func (s *Status) Container(id string) (prober.ContainerStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.containers {
		if c.ContainerID == id {
			return c, true
		}
	}
	return prober.ContainerStatus{}, false
}

// Pod implements prober.StatusSource.
func (s *Status) Pod(uid string) []prober.ContainerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []prober.ContainerStatus
	for _, c := range s.containers {
		if c.PodUID == uid {
			out = append(out, c)
		}
	}
	return out
}

// SetPodSpec sets the probes PodSpec gives for the pod with uid; nil
// forgets the pod.
func (s *Status) SetPodSpec(uid string, p *probespec.Parsed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.specs == nil {
		s.specs = map[string]*probespec.Parsed{}
	}
	if p == nil {
		delete(s.specs, uid)
		return
	}
	s.specs[uid] = p
}

// PodSpec implements prober.StatusSource.
func (s *Status) PodSpec(uid string) (*probespec.Parsed, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.specs[uid]
	return p, ok
}

// SubscribeResults implements prober.StatusSource.
func (s *Status) SubscribeResults(buffer int) (<-chan prober.ResultChange, func()) {
	return s.results.Subscribe(buffer)
}

// SubscribeEvents implements prober.StatusSource.
func (s *Status) SubscribeEvents(buffer int) (<-chan prober.Event, func()) {
	return s.events.Subscribe(buffer)
}

// PublishResult delivers a change to subscribers with room; it never blocks.
func (s *Status) PublishResult(rc prober.ResultChange) { s.results.Publish(rc) }

// PublishEvent delivers an event to subscribers with room; it never blocks.
func (s *Status) PublishEvent(ev prober.Event) { s.events.Publish(ev) }

// ResultStats reports live result subscriptions, changes dropped for
// lagging subscribers, and subscriptions cancelled.
func (s *Status) ResultStats() (subscribers int, dropped uint64, cancelled int) {
	return s.results.Stats()
}

// EventStats is ResultStats for probe events.
func (s *Status) EventStats() (subscribers int, dropped uint64, cancelled int) {
	return s.events.Stats()
}

// ResultsBuffered reports result changes published and not yet taken by
// their subscribers.
func (s *Status) ResultsBuffered() int { return s.results.Buffered() }

// View is a fake lifecycle.View whose publisher never blocks.
type View struct {
	mu     sync.Mutex
	pods   []node.Pod
	nri    atomic.Bool
	events *fanout.Hub[node.Event]
}

var _ lifecycle.View = (*View)(nil)

// NewView returns a connected View holding pods.
func NewView(pods ...node.Pod) *View {
	v := &View{pods: pods, events: newHub[node.Event]()}
	v.nri.Store(true)
	return v
}

// Set replaces the pods.
func (v *View) Set(pods ...node.Pod) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.pods = pods
}

// SetNRIConnected sets what Connected reports.
func (v *View) SetNRIConnected(ok bool) { v.nri.Store(ok) }

// Pods implements lifecycle.View.
func (v *View) Pods() []node.Pod {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.pods)
}

// SubscribeEvents implements lifecycle.View.
func (v *View) SubscribeEvents(buffer int) (<-chan node.Event, func()) {
	return v.events.Subscribe(buffer)
}

// Connected implements server.NRIStatus: a View stands for the NRI
// plugin too.
func (v *View) Connected() bool { return v.nri.Load() }

// Publish delivers a lifecycle event to subscribers with room; it never blocks.
func (v *View) Publish(ev node.Event) { v.events.Publish(ev) }

// EventStats reports live subscriptions, drops and cancellations.
func (v *View) EventStats() (subscribers int, dropped uint64, cancelled int) {
	return v.events.Stats()
}

// EventsBuffered reports lifecycle events published and not yet taken by
// their subscribers.
func (v *View) EventsBuffered() int { return v.events.Buffered() }

// CloseSubscriptions ends every lifecycle subscription.
func (v *View) CloseSubscriptions() { v.events.Close() }
