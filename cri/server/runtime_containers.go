package server

import (
	"context"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListContainers lists the known containers that pass the filter.
func (r *runtimeService) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: r.containers(req.GetFilter())}, nil
}

// StreamContainers is ListContainers in batches.
func (r *runtimeService) StreamContainers(req *runtimeapi.StreamContainersRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamContainersResponse]) error {
	return sendBatches(r.containers(req.GetFilter()), func(b []*runtimeapi.Container) error {
		return stream.Send(&runtimeapi.StreamContainersResponse{Containers: b})
	})
}

func (r *runtimeService) containers(f *runtimeapi.ContainerFilter) []*runtimeapi.Container {
	out := []*runtimeapi.Container{}
	for _, e := range r.s.snapshot().entries {
		if containerMatches(e, f) {
			out = append(out, criContainer(e))
		}
	}
	return out
}

// containerMatches applies a CRI container filter; IDs may be prefixes,
// labels include the identity labels probelet fills in.
func containerMatches(e entry, f *runtimeapi.ContainerFilter) bool {
	if f == nil {
		return true
	}
	if f.GetId() != "" && !hasPrefix(e.ctr.ID, f.GetId()) {
		return false
	}
	if f.GetPodSandboxId() != "" && !hasPrefix(e.pod.SandboxID, f.GetPodSandboxId()) {
		return false
	}
	if f.GetState() != nil && f.GetState().GetState() != criContainerState(e.ctr.State) {
		return false
	}
	return labelsMatch(criLabels(e), f.GetLabelSelector())
}

// ContainerStatus describes one container; the ID may be a unique prefix.
// The verbose info carries the probe state under "probelet".
func (r *runtimeService) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	e, err := r.s.container(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: criContainerStatus(e)}
	if req.GetVerbose() {
		if resp.Info, err = containerVerboseInfo(e); err != nil {
			return nil, err
		}
	}
	return resp, nil
}
