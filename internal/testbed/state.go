package testbed

import "time"

// Container states as CRI names them.
const (
	StateCreated = "CONTAINER_CREATED"
	StateRunning = "CONTAINER_RUNNING"
	StateExited  = "CONTAINER_EXITED"
	StateUnknown = "CONTAINER_UNKNOWN"
)

// ContainerState is a container's CRI status.
type ContainerState struct {
	// State is one of the State* constants.
	State string
	// ExitCode and Reason are set once the container exited.
	ExitCode int32
	Reason   string
	// CreatedAt, StartedAt and FinishedAt are zero until they happen.
	CreatedAt, StartedAt, FinishedAt time.Time
	// Pid is the container's init process on the host, 0 when not running.
	Pid int
}

// ContainerState returns the container's status (crictl inspect).
func (b *Bed) ContainerState(containerID string) (ContainerState, error) {
	var st struct {
		Status struct {
			State      string    `json:"state"`
			ExitCode   int32     `json:"exitCode"`
			Reason     string    `json:"reason"`
			CreatedAt  time.Time `json:"createdAt"`
			StartedAt  time.Time `json:"startedAt"`
			FinishedAt time.Time `json:"finishedAt"`
		} `json:"status"`
		Info struct {
			Pid int `json:"pid"`
		} `json:"info"`
	}
	if err := b.inspect(&st, "inspect", containerID); err != nil {
		return ContainerState{}, err
	}
	s := st.Status
	cs := ContainerState{State: s.State, ExitCode: s.ExitCode, Reason: s.Reason,
		CreatedAt: zeroIfUnset(s.CreatedAt), StartedAt: zeroIfUnset(s.StartedAt), FinishedAt: zeroIfUnset(s.FinishedAt)}
	if s.State == StateRunning {
		cs.Pid = st.Info.Pid
	}
	return cs, nil
}

// zeroIfUnset maps crictl's rendering of an unset timestamp (the Unix epoch
// or year 1) to the zero time.
func zeroIfUnset(t time.Time) time.Time {
	if t.Year() <= 1970 {
		return time.Time{}
	}
	return t
}
