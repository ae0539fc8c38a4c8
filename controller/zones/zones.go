// Package zones is probelet-controller's judgement, without I/O: which
// probelets went silent (Tracker), what state each zone is in (ComputeState)
// and how fast the pods of a silent probelet's node may be marked not Ready
// in each zone (Rates, Limiters). The rules and thresholds are the node
// lifecycle controller's (pkg/controller/nodelifecycle in
// kube-controller-manager), applied to probelet's node Leases instead of
// the kubelet's.
package zones

import (
	"errors"
	"fmt"

	"github.com/probelet/probelet/internal/disruption"
)

// State is a zone's disruption state.
type State = disruption.State

// The zone states, as the node lifecycle controller names them.
const (
	// Normal: most of the zone's probelets renew their Leases.
	Normal = disruption.Normal
	// PartialDisruption: more than 2, and at least the unhealthy zone
	// threshold, of the zone's probelets are silent.
	PartialDisruption = disruption.PartialDisruption
	// FullDisruption: no probelet in the zone renews its Lease.
	FullDisruption = disruption.FullDisruption
)

// Defaults are the node lifecycle controller's thresholds
// (--unhealthy-zone-threshold, --large-cluster-size-threshold) and
// probelet-controller's marking rates.
const (
	DefaultUnhealthyZoneThreshold    = 0.55
	DefaultLargeClusterSizeThreshold = 50
	// DefaultMarkingRate is pods per second per zone. The node lifecycle
	// controller evicts 0.1 nodes/s but marks a node's pods not Ready all
	// at once; probelet-controller marks pods one by one. At 10/s the few
	// gated pods a node usually has are marked within a second of the
	// grace period and a full node (110 pods) within about 11 s, while a
	// bad rollout silencing a Normal zone still takes minutes to empty its
	// Services, long enough to be seen and stopped.
	DefaultMarkingRate = 10
	// DefaultSecondaryMarkingRate is the node lifecycle controller's
	// ratio (0.01 against 0.1 nodes/s): a tenth of the marking rate.
	DefaultSecondaryMarkingRate = 1
)

// Config holds the zone rules' settings.
type Config struct {
	// UnhealthyZoneThreshold is the share of silent probelets at or
	// above which a zone with more than 2 of them is PartialDisruption.
	UnhealthyZoneThreshold float32
	// LargeClusterSizeThreshold is the zone size above which a
	// PartialDisruption marks at SecondaryMarkingRate rather than not at
	// all.
	LargeClusterSizeThreshold int
	// MarkingRate is pods per second in a Normal zone, and in a
	// FullDisruption zone while other zones are not fully disrupted.
	MarkingRate float32
	// SecondaryMarkingRate is pods per second in a PartialDisruption
	// zone larger than LargeClusterSizeThreshold.
	SecondaryMarkingRate float32
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{UnhealthyZoneThreshold: DefaultUnhealthyZoneThreshold, LargeClusterSizeThreshold: DefaultLargeClusterSizeThreshold,
		MarkingRate: DefaultMarkingRate, SecondaryMarkingRate: DefaultSecondaryMarkingRate}
}

// Validate names each invalid setting by its flag.
func (c Config) Validate() error {
	var errs []error
	if !(c.UnhealthyZoneThreshold > 0 && c.UnhealthyZoneThreshold <= 1) {
		errs = append(errs, fmt.Errorf("--unhealthy-zone-threshold: %v is not in (0, 1]", c.UnhealthyZoneThreshold))
	}
	if c.LargeClusterSizeThreshold < 0 {
		errs = append(errs, fmt.Errorf("--large-cluster-size-threshold: %d is negative", c.LargeClusterSizeThreshold))
	}
	if !(c.MarkingRate >= 0) {
		errs = append(errs, fmt.Errorf("--marking-rate: %v is negative", c.MarkingRate))
	}
	if !(c.SecondaryMarkingRate >= 0) {
		errs = append(errs, fmt.Errorf("--secondary-marking-rate: %v is negative", c.SecondaryMarkingRate))
	}
	return errors.Join(errs...)
}

// Count is a zone's census: nodes whose probelet renews its Lease, and
// nodes whose probelet went silent.
type Count struct {
	Healthy, Unhealthy int
}

// Size is the zone's node count.
func (c Count) Size() int { return c.Healthy + c.Unhealthy }

// ComputeState is the node lifecycle controller's ComputeZoneState with
// "Ready" read as "its probelet renews its Lease": FullDisruption when no
// node of the zone is healthy and some is not; PartialDisruption when more
// than 2 are not and they are at least threshold of the zone; else Normal.
// The share is computed in float32, as there.
func ComputeState(c Count, threshold float32) State {
	switch {
	case c.Healthy == 0 && c.Unhealthy > 0:
		return FullDisruption
	case c.Unhealthy > 2 && float32(c.Unhealthy)/float32(c.Size()) >= threshold:
		return PartialDisruption
	}
	return Normal
}

// Verdict is the states of all zones and each zone's marking rate.
type Verdict struct {
	States map[string]State
	Rates  map[string]float32 // pods per second
	// AllDisrupted says every zone is in FullDisruption: nothing is
	// marked anywhere (the node lifecycle controller's "master disruption
	// mode"), since most probelets silent at once means a bad rollout or
	// the control plane, not the apps.
	AllDisrupted bool
}

// Judge computes every zone's state and rate from their counts, as the
// node lifecycle controller's handleDisruption does: when every zone is
// fully disrupted every rate is 0; otherwise a Normal zone and a fully
// disrupted one mark at MarkingRate, a partially disrupted one at
// SecondaryMarkingRate if it has more than LargeClusterSizeThreshold
// nodes, else not at all. A zone without a node counted (no probelet in
// it) takes no part in "every zone"; no zones at all is no disruption.
func (c Config) Judge(counts map[string]Count) Verdict {
	v := Verdict{States: make(map[string]State, len(counts)), Rates: make(map[string]float32, len(counts))}
	disrupted, occupied := 0, 0
	for zone, n := range counts {
		s := ComputeState(n, c.UnhealthyZoneThreshold)
		v.States[zone] = s
		if n.Size() > 0 {
			occupied++
		}
		if s == FullDisruption {
			disrupted++
		}
	}
	v.AllDisrupted = occupied > 0 && disrupted == occupied
	for zone, s := range v.States {
		switch {
		case v.AllDisrupted:
			v.Rates[zone] = 0
		case s == PartialDisruption:
			v.Rates[zone] = c.reducedRate(counts[zone].Size())
		default: // Normal, or FullDisruption while another zone is not
			v.Rates[zone] = c.MarkingRate
		}
	}
	return v
}

// reducedRate is the node lifecycle controller's ReducedQPSFunc: a small
// zone in partial disruption marks nothing.
func (c Config) reducedRate(zoneSize int) float32 {
	if zoneSize > c.LargeClusterSizeThreshold {
		return c.SecondaryMarkingRate
	}
	return 0
}
