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

// Pod sandbox lifecycle events. CRI announces a sandbox's changes as
// container events whose container ID is the sandbox ID; probelet keeps
// them apart, and only lifecycle's SubscribeRuntimeEvents delivers them,
// so subscribers of container events never see them.
const (
	// PodSandboxReadyEvent: the sandbox runs (NRI RunPodSandbox).
	PodSandboxReadyEvent EventType = iota + 100
	// PodSandboxStoppedEvent: the sandbox is being torn down.
	PodSandboxStoppedEvent
	// PodSandboxRemovedEvent: the sandbox is gone.
	PodSandboxRemovedEvent
)

// Sandbox reports whether t is a pod sandbox event.
func (t EventType) Sandbox() bool { return t >= PodSandboxReadyEvent }

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
	case PodSandboxReadyEvent:
		return "POD_SANDBOX_READY_EVENT"
	case PodSandboxStoppedEvent:
		return "POD_SANDBOX_STOPPED_EVENT"
	case PodSandboxRemovedEvent:
		return "POD_SANDBOX_REMOVED_EVENT"
	}
	return "UNKNOWN_EVENT"
}

// Event is one container (or, from SubscribeRuntimeEvents, pod sandbox)
// lifecycle event as probelet learned it.
type Event struct {
	Type      EventType
	Time      time.Time
	PodUID    string
	SandboxID string
	// ContainerID is empty for a sandbox event.
	ContainerID string
	// Seq numbers the events of lifecycle's SubscribeRuntimeEvents consecutively
	// in the order they were made; a subscriber that sees a gap lost
	// events. Zero elsewhere.
	Seq uint64
	// Pod is a snapshot of the pod (with its containers) right after the event.
	Pod Pod
}
