// Package disruption names the node lifecycle controller's disruption
// states, which probelet computes twice: the kill guard for a node's pods
// (killguard) and probelet-controller for a zone's agents (controller/zones).
package disruption

import "fmt"

// State is a disruption state.
type State int

// The states, mildest first, as the node lifecycle controller names them.
const (
	Normal State = iota
	PartialDisruption
	FullDisruption
)

// String returns the controller's spelling.
func (s State) String() string {
	switch s {
	case Normal:
		return "Normal"
	case PartialDisruption:
		return "PartialDisruption"
	case FullDisruption:
		return "FullDisruption"
	}
	return fmt.Sprintf("State(%d)", int(s))
}
