package node

// ContainerState is a container's runtime state, ordered by lifecycle:
// a container ID moves from created to running to exited, never back.
type ContainerState int

// The states, in lifecycle order.
const (
	StateUnknown ContainerState = iota
	StateCreated
	StateRunning
	StateExited
)

// String returns the CRI spelling ("CONTAINER_RUNNING", ...).
func (s ContainerState) String() string {
	switch s {
	case StateCreated:
		return "CONTAINER_CREATED"
	case StateRunning:
		return "CONTAINER_RUNNING"
	case StateExited:
		return "CONTAINER_EXITED"
	}
	return "CONTAINER_UNKNOWN"
}

// Before reports whether s comes earlier in the lifecycle than t; an
// unknown state comes before every known one.
func (s ContainerState) Before(t ContainerState) bool { return s < t }
