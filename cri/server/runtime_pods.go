package server

import (
	"context"

	"github.com/probelet/probelet/node"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// streamBatch is how many items each Stream* response carries.
const streamBatch = 100

// ListPodSandbox lists the known pods that pass the filter.
func (r *runtimeService) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: r.sandboxes(req.GetFilter())}, nil
}

// StreamPodSandboxes is ListPodSandbox in batches.
func (r *runtimeService) StreamPodSandboxes(req *runtimeapi.StreamPodSandboxesRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxesResponse]) error {
	return sendBatches(r.sandboxes(req.GetFilter()), func(b []*runtimeapi.PodSandbox) error {
		return stream.Send(&runtimeapi.StreamPodSandboxesResponse{PodSandboxes: b})
	})
}

func (r *runtimeService) sandboxes(f *runtimeapi.PodSandboxFilter) []*runtimeapi.PodSandbox {
	out := []*runtimeapi.PodSandbox{}
	for _, p := range r.s.snapshot().pods {
		if sandboxMatches(p, f) {
			out = append(out, criPodSandbox(p))
		}
	}
	return out
}

// sandboxMatches applies a CRI pod filter; the ID may be a prefix, as
// containerd allows.
func sandboxMatches(p *node.Pod, f *runtimeapi.PodSandboxFilter) bool {
	if f == nil {
		return true
	}
	if f.GetId() != "" && !hasPrefix(p.SandboxID, f.GetId()) {
		return false
	}
	if f.GetState() != nil && f.GetState().GetState() != criSandboxState(p) {
		return false
	}
	return labelsMatch(p.Labels, f.GetLabelSelector())
}

// labelsMatch is CRI's label selector: every key must be present with
// exactly that value.
func labelsMatch(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// PodSandboxStatus describes one pod; the ID may be a unique prefix.
func (r *runtimeService) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	c := r.s.snapshot()
	p, err := c.pod(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: criPodSandboxStatus(p)}
	members := c.containersOf(p)
	for _, e := range members {
		resp.ContainersStatuses = append(resp.ContainersStatuses, criContainerStatus(e))
	}
	if req.GetVerbose() {
		if resp.Info, err = sandboxVerboseInfo(p, members); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// sendBatches sends items in slices of streamBatch; nothing is sent for
// an empty list, as the Stream* calls specify.
func sendBatches[T any](items []T, send func([]T) error) error {
	for len(items) > 0 {
		n := min(streamBatch, len(items))
		if err := send(items[:n]); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}
