package zones_test

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/controller/zones"
	"github.com/probelet/probelet/probespec"
)

const grace = 40 * time.Second

func wantHealth(t *testing.T, tr *zones.Tracker, node string, want zones.Health) {
	t.Helper()
	if got, _ := tr.Health(node); got != want {
		t.Fatalf("%s: %s, want %s", node, got, want)
	}
}

// TestSilenceIsJudgedByObservedTime: a Lease whose renewTime is far off
// the controller's clock (either way) is healthy while it keeps changing,
// and silent after the grace period without a change, whatever it says.
func TestSilenceIsJudgedByObservedTime(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	tr := zones.NewTracker(clk, grace, probespec.LeaseRenewInterval)
	behind, ahead := t0.Add(-3*time.Hour), t0.Add(2*time.Hour)
	tr.ObserveLease("behind", behind)
	tr.ObserveLease("ahead", ahead)
	for i := 1; i <= 10; i++ {
		clk.Step(10 * time.Second)
		tr.ObserveLease("behind", behind.Add(time.Duration(i)*10*time.Second))
		wantHealth(t, tr, "behind", zones.Healthy)
		// ahead's probelet is stopped: its renewTime, two hours in the
		// future, does not keep it healthy.
		tr.ObserveLease("ahead", ahead)
	}
	wantHealth(t, tr, "ahead", zones.Unavailable)

	// Up to SuspectAfter it is healthy, then suspect; exactly at the grace
	// period it is not silent yet; just after, it is.
	clk.Step(zones.SuspectAfter(grace, probespec.LeaseRenewInterval))
	wantHealth(t, tr, "behind", zones.Healthy)
	clk.Step(time.Nanosecond)
	wantHealth(t, tr, "behind", zones.Suspect)
	clk.Step(grace - zones.SuspectAfter(grace, probespec.LeaseRenewInterval) - time.Nanosecond)
	wantHealth(t, tr, "behind", zones.Suspect)
	clk.Step(time.Nanosecond)
	wantHealth(t, tr, "behind", zones.Unavailable)
	if _, renew := tr.Health("behind"); !renew.Equal(behind.Add(100 * time.Second)) {
		t.Fatalf("last renewal %v, want the last renewTime seen", renew)
	}

	// A node clock stepped back is still a renewal.
	tr.ObserveLease("behind", behind)
	wantHealth(t, tr, "behind", zones.Healthy)
}

// TestGraceRunsFromWhenTheRenewalArrived: a renewal the watch delivered
// between passes starts the grace period when it arrived, not at the pass
// that looks at it; never before the node's last observation (a node
// first seen, or after Reset, has the whole grace period from then), and
// never after now.
func TestGraceRunsFromWhenTheRenewalArrived(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s := time.Second
	for _, tc := range []struct {
		name        string
		seen        time.Duration // after t0, the tracker's first pass at t0
		pass        time.Duration // the pass that observes it
		wantSilence time.Duration // silent from just after this, after t0
	}{
		{"arrived between passes", 6 * s, 10 * s, 6*s + grace},
		{"arrived before the node's last observation", -3 * s, 10 * s, grace},
		{"stamped after the pass", 12 * s, 10 * s, 10*s + grace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			tr := zones.NewTracker(clk, grace, probespec.LeaseRenewInterval)
			tr.ObserveLease("n", t0.Add(-time.Hour)) // first seen at t0
			clk.SetTime(t0.Add(tc.pass))
			tr.ObserveLeaseAt("n", t0, t0.Add(tc.seen))
			clk.SetTime(t0.Add(tc.wantSilence))
			wantHealth(t, tr, "n", zones.Suspect)
			clk.Step(time.Nanosecond)
			wantHealth(t, tr, "n", zones.Unavailable)
		})
	}
	// After Reset every node has the whole grace period from then, even
	// for a renewal that arrived before it.
	clk := clocktesting.NewFakeClock(t0)
	tr := zones.NewTracker(clk, grace, probespec.LeaseRenewInterval)
	tr.ObserveLease("n", t0.Add(-time.Hour))
	clk.Step(10 * s)
	tr.Reset()
	tr.ObserveLeaseAt("n", t0, t0.Add(5*s))
	clk.Step(grace)
	wantHealth(t, tr, "n", zones.Suspect)
	clk.Step(time.Nanosecond)
	wantHealth(t, tr, "n", zones.Unavailable)
}

func TestANewControllerGivesEveryNodeTheGracePeriod(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	tr := zones.NewTracker(clk, grace, probespec.LeaseRenewInterval)
	// A fresh leader finds a Lease last renewed an hour ago by the
	// node's clock: it still waits the grace period from now.
	tr.ObserveLease("n1", t0.Add(-time.Hour))
	tr.ObserveNode("n2") // no probelet Lease
	wantHealth(t, tr, "n1", zones.Healthy)
	wantHealth(t, tr, "n2", zones.Pending)
	wantHealth(t, tr, "n3", zones.Unknown)
	clk.Step(grace + time.Second)
	wantHealth(t, tr, "n1", zones.Unavailable)
	wantHealth(t, tr, "n2", zones.NotRunning)

	// Leaving a full disruption: everyone gets the grace period again.
	tr.Reset()
	wantHealth(t, tr, "n1", zones.Healthy)
	wantHealth(t, tr, "n2", zones.Pending)
	// The same Lease seen again is no renewal.
	clk.Step(grace + time.Second)
	tr.ObserveLease("n1", t0.Add(-time.Hour))
	wantHealth(t, tr, "n1", zones.Unavailable)
	// A Lease appearing on n2 later is its probelet starting.
	tr.ObserveLease("n2", t0)
	wantHealth(t, tr, "n2", zones.Healthy)

	tr.Forget("n1")
	wantHealth(t, tr, "n1", zones.Unknown)
	tr.Retain(func(name string) bool { return name != "n2" })
	wantHealth(t, tr, "n2", zones.Unknown)
}

// TestSuspectAfter: the grace period less a renew interval and a monitor
// pass, at least two renew intervals, at most the grace period.
func TestSuspectAfter(t *testing.T) {
	const s = time.Second
	for _, tc := range []struct{ grace, renew, want time.Duration }{
		{40 * s, 10 * s, 25 * s},
		{60 * s, 10 * s, 45 * s},
		{30 * s, 10 * s, 20 * s},
		{20 * s, 10 * s, 20 * s},
		{10 * s, 10 * s, 10 * s},
		{120 * s, 30 * s, 85 * s},
		{90 * s, 30 * s, 60 * s},
		{15 * s, 3 * s, 7 * s},
	} {
		if got := zones.SuspectAfter(tc.grace, tc.renew); got != tc.want {
			t.Errorf("SuspectAfter(%v, %v) = %v, want %v", tc.grace, tc.renew, got, tc.want)
		}
	}
}
