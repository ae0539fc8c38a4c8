package zones

// Node is a node as one monitor pass sees it.
type Node struct {
	Name string
	// Zone is the node's zone key (topology.kubernetes.io/region and
	// zone); every unlabelled node shares the zone "".
	Zone string
	// Ready is the Node's own Ready condition: a node that is not Ready
	// is the node lifecycle controller's business, counted in no zone
	// and never marked here.
	Ready bool
}

// Pass is the outcome of one monitor pass.
type Pass struct {
	Verdict
	// Counts are the zones' censuses behind the verdict.
	Counts map[string]Count
	// Unavailable are the Ready nodes whose probelet went silent
	// (ProbeletUnavailable); NotRunning those that never had one
	// (ProbeletNotRunning). Their pods are marked through the zone's
	// limiter.
	Unavailable, NotRunning []Node
	// Recovered says the pass left a disruption of every zone: every
	// node got the grace period again.
	Recovered bool
}

// Monitor is the node lifecycle controller's monitorNodeHealth pass over
// probelet Leases: census per zone, zone states and rates, the nodes to
// mark. Not safe for concurrent use.
type Monitor struct {
	cfg          Config
	tracker      *Tracker
	limiters     *Limiters
	allDisrupted bool
}

// NewMonitor returns a Monitor over a Tracker and Limiters.
func NewMonitor(cfg Config, t *Tracker, l *Limiters) *Monitor {
	return &Monitor{cfg: cfg, tracker: t, limiters: l}
}

// Pass judges every node now and sets the zones' rates. A Ready node
// counts in its zone as healthy or not once it has had a probelet Lease
// (not from SuspectAfter on, though its pods wait for the grace period);
// a node that never had one is neither (probelet may run on some nodes
// only) but is reported NotRunning after the grace period.
func (m *Monitor) Pass(nodes []Node) Pass {
	p := Pass{Counts: map[string]Count{}}
	for _, n := range nodes {
		m.tracker.ObserveNode(n.Name)
		if !n.Ready {
			continue
		}
		h, _ := m.tracker.Health(n.Name)
		c := p.Counts[n.Zone]
		switch h {
		case Healthy:
			c.Healthy++
		case Suspect:
			c.Unhealthy++
		case Unavailable:
			c.Unhealthy++
			p.Unavailable = append(p.Unavailable, n)
		case NotRunning:
			p.NotRunning = append(p.NotRunning, n)
		}
		p.Counts[n.Zone] = c
	}
	p.Verdict = m.cfg.Judge(p.Counts)
	if m.allDisrupted && !p.AllDisrupted {
		// Some probelets are back: as the node lifecycle controller
		// leaving its disruption mode, give everyone the grace period
		// again rather than mark the rest at once.
		m.tracker.Reset()
		p.Recovered, p.Unavailable, p.NotRunning = true, nil, nil
	}
	m.allDisrupted = p.AllDisrupted
	m.limiters.Apply(p.Verdict)
	return p
}
