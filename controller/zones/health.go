package zones

import (
	"time"

	"k8s.io/utils/clock"
)

// Health is what the controller knows of a node's probelet.
type Health int

// The health of a node's probelet.
const (
	// Unknown: the node is not tracked.
	Unknown Health = iota
	// Healthy: its Lease changed within the grace period, as the
	// controller observed it.
	Healthy
	// Unavailable: its Lease has not changed for the grace period.
	Unavailable
	// Pending: no Lease seen yet, and the node is younger than the grace
	// period in the controller's eyes.
	Pending
	// NotRunning: no Lease seen for the grace period: no probelet.
	NotRunning
	// Suspect: its Lease has not changed for SuspectAfter, but not yet
	// for the grace period. It counts as silent in its zone's census; its
	// pods are not marked before the grace period.
	Suspect
)

func (h Health) String() string {
	return [...]string{"Unknown", "Healthy", "Unavailable", "Pending", "NotRunning", "Suspect"}[h]
}

// MonitorPeriod is how often the controller looks at the Leases (its
// passes): a healthy probelet's Lease is seen changed at least every renew
// interval (probespec.LeaseRenewInterval by default, both sides'
// --lease-renew-interval) + MonitorPeriod.
const MonitorPeriod = 5 * time.Second

// SuspectAfter is how long a Lease renewed every renew may go unchanged
// before its probelet counts as silent in its zone's census: the grace
// period less a renew interval and a monitor pass, the most by which the silences of
// probelets stopped at the same moment are observed apart, but never
// below two renew intervals (a healthy Lease is not suspected) nor above
// the grace period. Without it the first of many probelets stopped
// together (a bad rollout) reaches the grace period while the others are
// still counted healthy, and its zone looks Normal long enough to mark
// its pods: the node lifecycle controller has that race; probelet's
// controller does not copy it (README "When probelet is down").
func SuspectAfter(grace, renew time.Duration) time.Duration {
	return min(grace, max(grace-renew-MonitorPeriod, 2*renew))
}

// Tracker judges silence as the node lifecycle controller does: by when
// the controller itself last observed a node's Lease change (its probe
// timestamp, on its own clock), never by comparing the Lease's renewTime
// with its clock. Clock skew between a node and the controller then
// cannot make a Lease look stale or fresh, and a node seen for the first
// time, or every node after Reset (a new leader, the end of a full
// disruption), gets the whole grace period. Not safe for concurrent use:
// the controller's single monitor goroutine owns it.
type Tracker struct {
	clock   clock.PassiveClock
	grace   time.Duration
	suspect time.Duration
	nodes   map[string]*observed
}

// observed is a node's nodeHealthData, reduced to the Lease.
type observed struct {
	probe  time.Time // the controller's clock
	renew  time.Time // the Lease's renewTime last seen: compared, never judged
	leased bool
}

// NewTracker returns a Tracker whose nodes, renewing every renew, are
// silent after grace.
func NewTracker(c clock.PassiveClock, grace, renew time.Duration) *Tracker {
	return &Tracker{clock: c, grace: grace, suspect: SuspectAfter(grace, renew), nodes: map[string]*observed{}}
}

func (t *Tracker) node(name string) *observed {
	o := t.nodes[name]
	if o == nil {
		o = &observed{probe: t.clock.Now()}
		t.nodes[name] = o
	}
	return o
}

// ObserveNode makes a node known; a node seen for the first time starts
// with the whole grace period.
func (t *Tracker) ObserveNode(name string) { t.node(name) }

// ObserveLease records a node's Lease as the controller sees it now: a
// renewTime other than the last one seen — later or earlier, a node's
// clock may step back — is a renewal, observed now. The first Lease seen
// of a node is one too.
func (t *Tracker) ObserveLease(name string, renew time.Time) {
	t.ObserveLeaseAt(name, renew, t.clock.Now())
}

// ObserveLeaseAt is ObserveLease for a Lease the controller's watch
// delivered at seen (its own clock), before this pass: the grace period
// runs from when the renewal arrived, not from the pass that looked at
// it, which is up to a monitor period later. It never runs from before
// the node's last observation (a node first seen, every node after Reset,
// gets the whole grace period from then) nor from after now.
func (t *Tracker) ObserveLeaseAt(name string, renew, seen time.Time) {
	o := t.node(name)
	if !o.leased || !renew.Equal(o.renew) {
		at := seen
		if now := t.clock.Now(); at.After(now) {
			at = now
		}
		if at.Before(o.probe) {
			at = o.probe
		}
		o.probe, o.renew, o.leased = at, renew, true
	}
}

// Forget drops a node that was deleted.
func (t *Tracker) Forget(name string) { delete(t.nodes, name) }

// Retain forgets every node for which keep is false.
func (t *Tracker) Retain(keep func(name string) bool) {
	for name := range t.nodes {
		if !keep(name) {
			delete(t.nodes, name)
		}
	}
}

// Reset gives every node the whole grace period from now, as the node
// lifecycle controller does when it leaves full disruption; a new leader
// starts the same way, with an empty Tracker.
func (t *Tracker) Reset() {
	now := t.clock.Now()
	for _, o := range t.nodes {
		o.probe = now
	}
}

// Health is the node's probelet health now, and the Lease's renewTime
// last seen (zero without a Lease), for the message a marking writes.
func (t *Tracker) Health(name string) (Health, time.Time) {
	o := t.nodes[name]
	if o == nil {
		return Unknown, time.Time{}
	}
	now := t.clock.Now()
	silent := now.After(o.probe.Add(t.grace))
	switch {
	case o.leased && silent:
		return Unavailable, o.renew
	case o.leased && now.After(o.probe.Add(t.suspect)):
		return Suspect, o.renew
	case o.leased:
		return Healthy, o.renew
	case silent:
		return NotRunning, time.Time{}
	}
	return Pending, time.Time{}
}
