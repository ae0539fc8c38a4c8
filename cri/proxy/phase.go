package proxy

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// phase is where a container or sandbox is in its life, in order; the
// announcer emits the CRI events between the phase it last announced and
// the one containerd reports.
type phase int

const (
	phaseNone    phase = iota // never announced
	phaseCreated              // container created
	phaseRunning              // container running, sandbox ready
	phaseExited               // container exited, sandbox not ready
	phaseGone                 // removed
)

func containerPhase(s runtimeapi.ContainerState) phase {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return phaseCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return phaseRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return phaseExited
	}
	// CONTAINER_UNKNOWN: containerd could not tell (a shim it lost).
	// Nothing is announced until it can.
	return phaseNone
}

func sandboxPhase(s runtimeapi.PodSandboxState) phase {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return phaseRunning
	}
	return phaseExited
}

// transitions are the CRI events from phase old to cur, in order, as
// containerd would have sent them one by one: a sandbox is created and
// started together; a container that is seen exited without ever having
// started (started false) gets no STARTED.
func transitions(old, cur phase, sandbox, started bool) []runtimeapi.ContainerEventType {
	if cur <= old || cur == phaseNone || (old == phaseNone && cur == phaseGone) {
		return nil
	}
	var out []runtimeapi.ContainerEventType
	for ph := old + 1; ph <= cur; ph++ {
		switch ph {
		case phaseCreated:
			out = append(out, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
		case phaseRunning:
			if cur == phaseRunning || started || sandbox {
				out = append(out, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
			}
		case phaseExited:
			out = append(out, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
		case phaseGone:
			out = append(out, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
		}
	}
	return out
}
