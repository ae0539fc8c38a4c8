// Package lifecycle is probelet's event-driven replacement for the kubelet's
// PLEG: the node's pod/container cache, fed by NRI events, and the lifecycle
// events derived from them.
package lifecycle

import (
	"time"

	"github.com/probelet/probelet/prober"
)

// EventType is the kind of container lifecycle event, mirroring CRI's
// ContainerEventType.
type EventType int

const (
	ContainerCreated EventType = iota
	ContainerStarted
	ContainerStopped
	ContainerDeleted
)

// String returns the CRI spelling ("CONTAINER_STARTED_EVENT", ...).
func (t EventType) String() string {
	switch t {
	case ContainerCreated:
		return "CONTAINER_CREATED_EVENT"
	case ContainerStarted:
		return "CONTAINER_STARTED_EVENT"
	case ContainerStopped:
		return "CONTAINER_STOPPED_EVENT"
	case ContainerDeleted:
		return "CONTAINER_DELETED_EVENT"
	}
	return "UNKNOWN_EVENT"
}

// Event is one container lifecycle event as probelet learned it from NRI.
type Event struct {
	Type        EventType
	Time        time.Time
	PodUID      string
	SandboxID   string
	ContainerID string
	// Pod is a snapshot of the pod (with its containers) right after the event.
	Pod prober.Pod
}

// View is the read side of the node cache, served on probelet's socket.
type View interface {
	// Pods returns snapshots of every known pod with its containers.
	Pods() []prober.Pod
	// SubscribeEvents delivers lifecycle events as they happen. The channel
	// is buffered; a subscriber that falls behind loses events (counted),
	// it never blocks the NRI handlers. cancel closes the channel.
	SubscribeEvents(buffer int) (events <-chan Event, cancel func())
	// NRIConnected reports whether the NRI plugin is registered with the runtime.
	NRIConnected() bool
}
