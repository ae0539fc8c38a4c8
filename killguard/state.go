package killguard

import (
	"fmt"

	"github.com/probelet/probelet/internal/disruption"
)

// State is the node's disruption state, as the node lifecycle controller
// names a zone's.
type State = disruption.State

// The states, mildest first.
const (
	Normal            = disruption.Normal
	PartialDisruption = disruption.PartialDisruption
	FullDisruption    = disruption.FullDisruption
)

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
