package server

import (
	"context"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/prober"
)

// apiVersion is the version of probelet's own API.
const apiVersion = "v1alpha1"

// apiService implements probelet.v1alpha1.Probelet.
type apiService struct {
	apiv1.UnimplementedProbeletServer
	s *Server
}

var _ apiv1.ProbeletServer = (*apiService)(nil)

// Version reports the build, the NRI connection and how TCP probes are
// answered.
func (a *apiService) Version(context.Context, *apiv1.VersionRequest) (*apiv1.VersionResponse, error) {
	v := &apiv1.VersionResponse{Version: a.s.version, ApiVersion: apiVersion, NriConnected: a.s.nri.Connected()}
	if a.s.tcp != nil {
		st := a.s.tcp()
		v.TcpMode, v.TcpModeRequested, v.TcpModeReason = st.Mode, st.Requested, st.Reason
	}
	return v, nil
}

// ListContainers lists containers with their probe state (no history).
func (a *apiService) ListContainers(_ context.Context, req *apiv1.ListContainersRequest) (*apiv1.ListContainersResponse, error) {
	r, err := parseRef(req.GetContainer())
	if err != nil {
		return nil, err
	}
	resp := &apiv1.ListContainersResponse{}
	for _, e := range r.filter(a.s.snapshot().entries) {
		resp.Containers = append(resp.Containers, pbContainer(e, 0))
	}
	return resp, nil
}

// GetContainer returns one container with history, restarts and events.
func (a *apiService) GetContainer(_ context.Context, req *apiv1.GetContainerRequest) (*apiv1.GetContainerResponse, error) {
	e, err := a.resolve(req.GetContainer())
	if err != nil {
		return nil, err
	}
	history := int(req.GetHistoryLimit())
	if history <= 0 {
		history = -1
	}
	resp := &apiv1.GetContainerResponse{Container: pbContainer(e, history)}
	for _, ev := range a.eventsOf(e) {
		resp.Events = append(resp.Events, pbEvent(ev))
	}
	return resp, nil
}

// Why explains the container's state.
func (a *apiService) Why(_ context.Context, req *apiv1.WhyRequest) (*apiv1.WhyResponse, error) {
	e, err := a.resolve(req.GetContainer())
	if err != nil {
		return nil, err
	}
	return &apiv1.WhyResponse{Container: pbContainer(e, -1), Explanations: explanations(e)}, nil
}

func (a *apiService) resolve(raw string) (entry, error) {
	r, err := parseRef(raw)
	if err != nil {
		return entry{}, err
	}
	if len(r.parts) == 1 {
		if e, ok := a.s.lookup(r.raw); ok {
			return e, nil // a full container ID wins over every other reading
		}
	}
	return r.resolve(a.s.snapshot().entries)
}

// eventsOf returns the retained events of the container's name in its pod,
// earlier instances included (a restart changes the container ID).
func (a *apiService) eventsOf(e entry) []prober.Event {
	var out []prober.Event
	for _, ev := range a.s.events.snapshot() {
		if sameContainer(ev, e) {
			out = append(out, ev)
		}
	}
	return out
}

func sameContainer(ev prober.Event, e entry) bool {
	if ev.ContainerID == e.ctr.ID {
		return true
	}
	if ev.ContainerName != e.ctr.Name {
		return false
	}
	if ev.PodUID != "" && e.pod.UID != "" {
		return ev.PodUID == e.pod.UID
	}
	return ev.PodNamespace == e.namespace() && ev.PodName == e.podName()
}

// ListExplained answers Why for every container of a namespace's pods (or
// of every namespace), in one read of the catalog.
func (a *apiService) ListExplained(_ context.Context, req *apiv1.ListExplainedRequest) (*apiv1.ListExplainedResponse, error) {
	history := int(req.GetHistoryLimit())
	if history <= 0 {
		history = -1
	}
	names := map[string]bool{}
	for _, n := range req.GetPodNames() {
		names[n] = true
	}
	resp := &apiv1.ListExplainedResponse{}
	for _, e := range a.s.snapshot().entries {
		if ns := req.GetNamespace(); ns != "" && e.namespace() != ns {
			continue
		}
		if len(names) > 0 && !names[e.podName()] {
			continue
		}
		why := &apiv1.WhyResponse{Container: pbContainer(e, history), Explanations: explanations(e)}
		for _, x := range why.Explanations {
			if history >= 0 && len(x.LastRuns) > history {
				x.LastRuns = x.LastRuns[len(x.LastRuns)-history:]
			}
		}
		cutOutputs(why, int(req.GetOutputLimit()))
		resp.Containers = append(resp.Containers, why)
	}
	return resp, nil
}
