package killguard

import "fmt"

// State is the node's disruption state, as the node lifecycle controller
// names a zone's.
type State int

// The states, mildest first.
const (
	Normal State = iota
	PartialDisruption
	FullDisruption
)

// String returns the controller's spelling.
func (s State) String() string {
	switch s {
	case PartialDisruption:
		return "PartialDisruption"
	case FullDisruption:
		return "FullDisruption"
	}
	return "Normal"
}

// Census is the count the state is computed from: the node's running,
// started containers with a liveness probe, and how many of them fail it.
type Census struct {
	Probed, Failing int
}

func (c Census) String() string {
	return fmt.Sprintf("%d of %d liveness probes failing", c.Failing, c.Probed)
}

// classify is the state cfg gives a census.
func (cfg Config) classify(c Census) State {
	if c.Probed == 0 || c.Failing < cfg.MinFailing {
		return Normal
	}
	share := float64(c.Failing) / float64(c.Probed)
	switch {
	case share >= cfg.UnhealthyThreshold:
		return FullDisruption
	case share >= cfg.PartialThreshold:
		return PartialDisruption
	}
	return Normal
}
