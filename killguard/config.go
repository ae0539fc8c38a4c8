// Package killguard keeps liveness kills from turning a shared hiccup into
// a restart storm, the way Kubernetes' node lifecycle controller keeps a
// zone outage from evicting every node: it classifies the node as Normal,
// PartialDisruption or FullDisruption from the share of liveness probes
// failing, drains kills through a de-duplicated queue ordered by decision
// time and a token bucket, slows them in a partial disruption and pauses
// them in a full one. A held kill whose probe recovers is cancelled by the
// engine; one that keeps failing goes through when the node is Normal
// again, and never waits longer than a ceiling. It decorates the engine's
// ContainerKiller and leaves the kubelet rules untouched; off, kills flow
// exactly as the kubelet's do.
package killguard

import (
	"errors"
	"fmt"
	"time"
)

// Config is the guard's policy.
type Config struct {
	// Rate and Burst are the token bucket in Normal: kills go through at
	// once until Burst are spent, then Rate per second.
	Rate  float64 `json:"rate,omitempty"`
	Burst int     `json:"burst,omitempty"`
	// SecondaryRate is the kills per second in PartialDisruption.
	SecondaryRate float64 `json:"secondaryRate,omitempty"`
	// PartialThreshold and UnhealthyThreshold are the shares of the node's
	// liveness- or startup-probed pods failing (at a failureThreshold) at
	// which the node is in PartialDisruption and FullDisruption.
	PartialThreshold   float64 `json:"partialThreshold,omitempty"`
	UnhealthyThreshold float64 `json:"unhealthyThreshold,omitempty"`
	// MinFailing is the fewest failing pods that make a disruption:
	// on a node with two pods, both failing is not a storm.
	MinFailing int `json:"minFailing,omitempty"`
	// Ceiling bounds how long any kill waits.
	Ceiling time.Duration `json:"ceiling,omitempty"`
}

// Default is the node lifecycle controller's policy scaled from a zone of
// nodes to a node of containers (README "Kill guard" justifies each).
func Default() Config {
	return Config{
		Rate:               1,
		Burst:              5,
		SecondaryRate:      1.0 / 30,
		PartialThreshold:   0.30,
		UnhealthyThreshold: 0.55,
		MinFailing:         3,
		Ceiling:            10 * time.Minute,
	}
}

// Fault is one setting that cannot work. Setting is its name as the
// --kill-guard-* flags spell it ("rate", "min-failing").
type Fault struct {
	Setting string
	Err     error
}

func (f Fault) Error() string { return f.Setting + ": " + f.Err.Error() }

// Check lists every setting of c that cannot work.
func Check(c Config) []Fault {
	var faults []Fault
	check := func(setting string, ok bool, format string, a ...any) {
		if !ok {
			faults = append(faults, Fault{setting, fmt.Errorf(format, a...)})
		}
	}
	check("rate", c.Rate > 0, "%v must be positive (kills per second)", c.Rate)
	check("burst", c.Burst >= 1, "%d must be at least 1", c.Burst)
	check("secondary-rate", c.SecondaryRate >= 0, "%v must not be negative (0 pauses kills in a partial disruption)", c.SecondaryRate)
	check("partial-threshold", c.PartialThreshold > 0 && c.PartialThreshold <= 1, "%v must be in (0, 1]", c.PartialThreshold)
	check("unhealthy-threshold", c.UnhealthyThreshold > 0 && c.UnhealthyThreshold <= 1, "%v must be in (0, 1]", c.UnhealthyThreshold)
	check("partial-threshold", c.PartialThreshold <= c.UnhealthyThreshold, "%v must not exceed the unhealthy threshold %v",
		c.PartialThreshold, c.UnhealthyThreshold)
	check("min-failing", c.MinFailing >= 1, "%d must be at least 1", c.MinFailing)
	check("ceiling", c.Ceiling > 0, "%v must be positive", c.Ceiling)
	return faults
}

// Validate reports every setting that cannot work, naming it.
func (c Config) Validate() error {
	var errs []error
	for _, f := range Check(c) {
		errs = append(errs, f)
	}
	return errors.Join(errs...)
}
