package zones_test

import (
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/controller/zones"
	"github.com/probelet/probelet/probespec"
)

func names(nodes []zones.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

// TestMonitorPass: the must-shows on two nodes A and B in one
// zone, as the pure logic sees them.
func TestMonitorPass(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	tr := zones.NewTracker(clk, grace, probespec.LeaseRenewInterval)
	m := zones.NewMonitor(zones.DefaultConfig(), tr, zones.NewLimiters(clk))
	nodes := []zones.Node{{Name: "a", Ready: true}, {Name: "b", Ready: true}, {Name: "c", Ready: true},
		{Name: "down", Ready: false}}
	renew := map[string]time.Time{"a": t0, "b": t0}
	beat := func(who ...string) {
		for _, n := range who {
			renew[n] = renew[n].Add(10 * time.Second)
			tr.ObserveLease(n, renew[n])
		}
	}
	beat("a", "b")
	p := m.Pass(nodes)
	if len(p.Unavailable)+len(p.NotRunning) != 0 || p.States[""] != zones.Normal {
		t.Fatalf("at start: %+v, want nothing to mark", p)
	}

	// A's probelet stops; B renews. After the grace period A is
	// unavailable, c (never a Lease) not running, "down" left alone.
	for range 5 {
		clk.Step(10 * time.Second)
		beat("b")
	}
	p = m.Pass(nodes)
	if got := names(p.Unavailable); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("unavailable %v, want [a]", got)
	}
	if got := names(p.NotRunning); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("not running %v, want [c]", got)
	}
	if p.States[""] != zones.Normal || p.Rates[""] != zones.DefaultMarkingRate {
		t.Fatalf("zone %s at %v, want Normal at the marking rate", p.States[""], p.Rates[""])
	}

	// B stops too: 2 of 2 silent, the only zone fully disrupted: rate 0.
	clk.Step(grace + time.Second)
	p = m.Pass(nodes)
	if !p.AllDisrupted || p.Rates[""] != 0 || p.States[""] != zones.FullDisruption {
		t.Fatalf("both silent: %+v, want every zone disrupted and nothing marked", p.Verdict)
	}

	// A comes back: everyone gets the grace period again, nothing marked.
	beat("a")
	p = m.Pass(nodes)
	if !p.Recovered || len(p.Unavailable)+len(p.NotRunning) != 0 {
		t.Fatalf("after A returned: %+v, want a recovery that marks nothing", p)
	}
	if h, _ := tr.Health("b"); h != zones.Healthy {
		t.Fatalf("b is %s right after the recovery, want a new grace period", h)
	}
}
