package server

import (
	"github.com/probelet/probelet/node"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// GetContainerEvents streams container lifecycle events as the lifecycle
// cache learns them from NRI. A client that stops reading is disconnected
// (ResourceExhausted) and its subscription cancelled.
func (r *runtimeService) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	sub, cancel := r.s.view.SubscribeEvents(r.s.streamQueue)
	return r.s.streamEnded("GetContainerEvents", relay(stream.Context(), r.s.done, r.s.streamQueue, nil, sub, cancel,
		func(ev node.Event) (*runtimeapi.ContainerEventResponse, bool) { return criEvent(ev), true },
		stream.Send))
}

func criEventType(t node.EventType) runtimeapi.ContainerEventType {
	switch t {
	case node.ContainerStartedEvent:
		return runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
	case node.ContainerStoppedEvent:
		return runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	case node.ContainerDeletedEvent:
		return runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
	}
	return runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
}

// criEvent converts a lifecycle event, with the pod snapshot it carries as
// the sandbox and container statuses (like containerd sends them).
func criEvent(ev node.Event) *runtimeapi.ContainerEventResponse {
	pod := ev.Pod
	resp := &runtimeapi.ContainerEventResponse{
		ContainerId:        ev.ContainerID,
		ContainerEventType: criEventType(ev.Type),
		CreatedAt:          unixNano(ev.Time),
	}
	if pod.SandboxID == "" {
		pod.SandboxID = ev.SandboxID
	}
	if pod.SandboxID != "" {
		resp.PodSandboxStatus = criPodSandboxStatus(&pod)
	}
	for _, c := range pod.Containers {
		resp.ContainersStatuses = append(resp.ContainersStatuses, criContainerStatus(entry{pod: &pod, ctr: c}))
	}
	return resp
}
