package proxy

import (
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/node"
)

// The conversions below build an event's contents from the node cache's
// snapshot, for the rare event announced while containerd cannot be
// asked; every other event carries containerd's own answers.

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func nodeSandboxStatus(p *node.Pod) *runtimeapi.PodSandboxStatus {
	st := &runtimeapi.PodSandboxStatus{
		Id:          p.SandboxID,
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: p.Name, Uid: p.UID, Namespace: p.Namespace},
		State:       runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt:   unixNano(p.CreatedAt),
		Labels:      p.Labels,
		Annotations: p.Annotations,
	}
	if p.Deleting {
		st.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	}
	if len(p.IPs) > 0 {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: p.IPs[0]}
		for _, ip := range p.IPs[1:] {
			st.Network.AdditionalIps = append(st.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
		}
	}
	return st
}

func nodeContainerStatus(c *node.Container) *runtimeapi.ContainerStatus {
	state := runtimeapi.ContainerState_CONTAINER_UNKNOWN
	switch c.State {
	case node.StateCreated:
		state = runtimeapi.ContainerState_CONTAINER_CREATED
	case node.StateRunning:
		state = runtimeapi.ContainerState_CONTAINER_RUNNING
	case node.StateExited:
		state = runtimeapi.ContainerState_CONTAINER_EXITED
	}
	return &runtimeapi.ContainerStatus{
		Id:          c.ID,
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name},
		State:       state,
		CreatedAt:   unixNano(c.CreatedAt),
		StartedAt:   unixNano(c.StartedAt),
		FinishedAt:  unixNano(c.FinishedAt),
		ExitCode:    c.ExitCode,
		Image:       &runtimeapi.ImageSpec{Image: c.Image},
		ImageRef:    c.Image,
		Labels:      c.Labels,
		Annotations: c.Annotations,
	}
}
