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

// Census is the count the state is computed from, in pods as the node
// lifecycle controller counts nodes: the node's pods with a running
// container under a liveness or startup probe, and how many of them have
// one whose probe reached its failureThreshold (a kill decided or
// waiting). A pod counts once however many containers it has.
type Census struct {
	Probed, Failing int
}

func (c Census) String() string {
	return fmt.Sprintf("%d of %d pods failing liveness", c.Failing, c.Probed)
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
