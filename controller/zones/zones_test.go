package zones_test

import (
	"maps"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/controller/zones"
)

// TestComputeStateIsTheNodeLifecycleControllersTable: FullDisruption when
// no node is healthy; PartialDisruption from 3 unhealthy nodes at 55 %;
// else Normal.
func TestComputeStateIsTheNodeLifecycleControllersTable(t *testing.T) {
	for _, tc := range []struct {
		healthy, unhealthy int
		want               zones.State
	}{
		{0, 0, zones.Normal}, // an empty zone is not disrupted
		{1, 0, zones.Normal},
		{0, 1, zones.FullDisruption},
		{0, 2, zones.FullDisruption},
		{0, 100, zones.FullDisruption},
		{1, 2, zones.Normal},             // 67 %, but only 2 unhealthy
		{0, 3, zones.FullDisruption},     // full wins over partial
		{1, 3, zones.PartialDisruption},  // 75 %
		{2, 3, zones.PartialDisruption},  // 60 %
		{3, 3, zones.Normal},             // 50 %
		{9, 11, zones.PartialDisruption}, // exactly 55 %
		{10, 11, zones.Normal},           // 52 %
		{45, 55, zones.PartialDisruption},
		{46, 54, zones.Normal},
		{99, 1, zones.Normal},
	} {
		c := zones.Count{Healthy: tc.healthy, Unhealthy: tc.unhealthy}
		if got := zones.ComputeState(c, zones.DefaultUnhealthyZoneThreshold); got != tc.want {
			t.Errorf("%d healthy, %d not: %s, want %s", tc.healthy, tc.unhealthy, got, tc.want)
		}
	}
}

func TestJudgeSetsEachZonesRate(t *testing.T) {
	cfg := zones.DefaultConfig()
	cfg.MarkingRate, cfg.SecondaryMarkingRate = 10, 1
	for _, tc := range []struct {
		name   string
		counts map[string]zones.Count
		want   map[string]float32
		all    bool
	}{{
		name:   "Normal zones mark at the marking rate",
		counts: map[string]zones.Count{"a": {Healthy: 10, Unhealthy: 1}, "b": {Healthy: 3}},
		want:   map[string]float32{"a": 10, "b": 10},
	}, {
		name:   "a small partially disrupted zone marks nothing",
		counts: map[string]zones.Count{"a": {Healthy: 20, Unhealthy: 30}, "b": {Healthy: 3}},
		want:   map[string]float32{"a": 0, "b": 10},
	}, {
		name:   "a large partially disrupted zone marks at the secondary rate",
		counts: map[string]zones.Count{"a": {Healthy: 20, Unhealthy: 31}, "b": {Healthy: 3}},
		want:   map[string]float32{"a": 1, "b": 10},
	}, {
		name:   "a fully disrupted zone while another is not marks at the marking rate",
		counts: map[string]zones.Count{"a": {Unhealthy: 2}, "b": {Healthy: 3}},
		want:   map[string]float32{"a": 10, "b": 10},
	}, {
		name:   "a fully disrupted zone while another is partially disrupted",
		counts: map[string]zones.Count{"a": {Unhealthy: 2}, "b": {Healthy: 1, Unhealthy: 3}},
		want:   map[string]float32{"a": 10, "b": 0},
	}, {
		name:   "every zone fully disrupted: nothing is marked",
		counts: map[string]zones.Count{"a": {Unhealthy: 2}, "b": {Unhealthy: 60}},
		want:   map[string]float32{"a": 0, "b": 0}, all: true,
	}, {
		name:   "the one zone of an unlabelled cluster, fully disrupted: nothing",
		counts: map[string]zones.Count{"": {Unhealthy: 2}},
		want:   map[string]float32{"": 0}, all: true,
	}, {
		name: "no zones", counts: map[string]zones.Count{}, want: map[string]float32{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			v := cfg.Judge(tc.counts)
			if !maps.Equal(v.Rates, tc.want) || v.AllDisrupted != tc.all {
				t.Errorf("rates %v, all disrupted %v; want %v, %v (states %v)", v.Rates, v.AllDisrupted, tc.want, tc.all, v.States)
			}
		})
	}
}

func TestTheLargeClusterThresholdIsAStrictBound(t *testing.T) {
	cfg := zones.DefaultConfig() // 50
	at := cfg.Judge(map[string]zones.Count{"a": {Healthy: 20, Unhealthy: 30}, "b": {Healthy: 1}})
	above := cfg.Judge(map[string]zones.Count{"a": {Healthy: 20, Unhealthy: 31}, "b": {Healthy: 1}})
	if at.Rates["a"] != 0 || above.Rates["a"] != zones.DefaultSecondaryMarkingRate {
		t.Fatalf("50 nodes: %v, 51 nodes: %v; want 0 and the secondary rate", at.Rates["a"], above.Rates["a"])
	}
}

func TestConfigValidate(t *testing.T) {
	if err := zones.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := zones.Config{UnhealthyZoneThreshold: 1.5, LargeClusterSizeThreshold: -1, MarkingRate: -1, SecondaryMarkingRate: -1}
	err := bad.Validate()
	for _, flag := range []string{"--unhealthy-zone-threshold", "--large-cluster-size-threshold", "--marking-rate", "--secondary-marking-rate"} {
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("Validate() = %v, want it to name %s", err, flag)
		}
	}
}

// TestLimitersPaceEachZoneOnTheClock: one marking at once (burst 1), then
// one per 1/rate; rate 0 never; a swap keeps a waiting zone waiting.
func TestLimitersPaceEachZoneOnTheClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	l := zones.NewLimiters(clk)
	l.SetRate("a", 0.5)
	l.SetRate("b", 0)
	take := func(zone string) (n int) {
		for l.TryAccept(zone) {
			n++
		}
		return n
	}
	if a, b := take("a"), take("b"); a != 1 || b != 0 {
		t.Fatalf("at once: %d from a, %d from b; want the burst of 1 and none", a, b)
	}
	clk.Step(1999 * time.Millisecond)
	if n := take("a"); n != 0 {
		t.Fatalf("%d markings before 2 s at 0.5/s", n)
	}
	clk.Step(time.Millisecond)
	if n := take("a"); n != 1 {
		t.Fatalf("%d markings at 2 s, want 1", n)
	}
	clk.Step(time.Hour)
	if n := take("a"); n != 1 {
		t.Fatalf("%d markings after an hour, want 1 (burst 1)", n)
	}
	if n := take("b"); n != 0 {
		t.Fatalf("rate 0 gave %d markings", n)
	}
	if n := take("unset"); n != 0 {
		t.Fatalf("a zone never set gave %d markings", n)
	}

	// a waits for its next token; a new rate does not hand out one.
	l.SetRate("a", 10)
	if n := take("a"); n != 0 {
		t.Fatalf("a waiting zone got %d markings from a rate swap", n)
	}
	clk.Step(100 * time.Millisecond)
	if n := take("a"); n != 1 {
		t.Fatalf("%d markings 100 ms later at 10/s, want 1", n)
	}
	// b, at 0, was waiting too.
	l.SetRate("b", 10)
	if n := take("b"); n != 0 {
		t.Fatalf("b got %d markings from a rate swap", n)
	}
	// The same rate again changes nothing.
	clk.Step(100 * time.Millisecond)
	l.SetRate("a", 10)
	if n := take("a"); n != 1 {
		t.Fatalf("%d markings after setting the same rate, want 1", n)
	}
	// Apply: every zone fully disrupted stops all of them.
	clk.Step(time.Hour)
	l.Apply(zones.DefaultConfig().Judge(map[string]zones.Count{"a": {Unhealthy: 1}, "b": {Unhealthy: 1}}))
	if a, b := take("a"), take("b"); a != 0 || b != 0 {
		t.Fatalf("all zones disrupted: %d and %d markings, want none", a, b)
	}
}

func TestAZoneWithoutProbeletsTakesNoPartInEveryZone(t *testing.T) {
	v := zones.DefaultConfig().Judge(map[string]zones.Count{"a": {Unhealthy: 2}, "b": {}})
	if !v.AllDisrupted || v.Rates["a"] != 0 || v.Rates["b"] != 0 {
		t.Fatalf("verdict %+v, want every zone with probelets disrupted: nothing marked", v)
	}
}
