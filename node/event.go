package node

import "time"

// EventType is the kind of a container lifecycle event, mirroring CRI's
// ContainerEventType.
type EventType int

// The lifecycle events, as CRI names them.
const (
	ContainerCreatedEvent EventType = iota
	ContainerStartedEvent
	ContainerStoppedEvent
	ContainerDeletedEvent
)

// String returns the CRI spelling ("CONTAINER_STARTED_EVENT", ...).
func (t EventType) String() string {
	switch t {
	case ContainerCreatedEvent:
		return "CONTAINER_CREATED_EVENT"
	case ContainerStartedEvent:
		return "CONTAINER_STARTED_EVENT"
	case ContainerStoppedEvent:
		return "CONTAINER_STOPPED_EVENT"
	case ContainerDeletedEvent:
		return "CONTAINER_DELETED_EVENT"
	}
	return "UNKNOWN_EVENT"
}

// Event is one container lifecycle event as probelet learned it.
type Event struct {
	Type      EventType
	Time      time.Time
	PodUID    string
	SandboxID string
	// ContainerID is empty for a sandbox event.
	ContainerID string
	// Pod is a snapshot of the pod (with its containers) right after the event.
	Pod Pod
}
