package server

import (
	"context"
	"encoding/json"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Names and condition types of the CRI Version and Status answers.
const (
	// RuntimeName is what Version reports as the runtime name.
	RuntimeName = "probelet"
	// criAPIVersion is the CRI version this server speaks.
	criAPIVersion = "v1"
	// kubeAPIVersion is the value the kubelet's own CRI shim reports.
	kubeAPIVersion = "0.1.0"
	// ConditionNRIConnected is probelet's own Status condition: whether it
	// is registered with the runtime's NRI socket.
	ConditionNRIConnected = "NRIConnected"
)

// runtimeService is the read-only runtime.v1.RuntimeService. Calls it does
// not override answer Unimplemented (see readonly.go).
type runtimeService struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	s *Server
}

var _ runtimeapi.RuntimeServiceServer = (*runtimeService)(nil)

// Version reports probelet as the runtime.
func (r *runtimeService) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           kubeAPIVersion,
		RuntimeName:       RuntimeName,
		RuntimeVersion:    r.s.version,
		RuntimeApiVersion: criAPIVersion,
	}, nil
}

// Status reports probelet's readiness and its NRI connection.
func (r *runtimeService) Status(_ context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	nri := r.s.nri.Connected()
	conds := []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true,
			Message: "probelet does not manage pod networking; ask the container runtime"},
		nriCondition(nri),
	}
	if r.s.tcp != nil {
		conds = append(conds, tcpCondition(r.s.tcp()))
	}
	resp := &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: conds}}
	if req.GetVerbose() {
		info, err := r.statusInfo(nri)
		if err != nil {
			return nil, err
		}
		resp.Info = info
	}
	return resp, nil
}

func nriCondition(connected bool) *runtimeapi.RuntimeCondition {
	c := &runtimeapi.RuntimeCondition{Type: ConditionNRIConnected, Status: connected}
	if !connected {
		c.Reason = "NRIDisconnected"
		c.Message = "probelet is not registered with the runtime's NRI socket; container state may be stale"
	}
	return c
}

// statusInfo is Status's verbose info: counts a person checks first.
func (r *runtimeService) statusInfo(nri bool) (map[string]string, error) {
	c := r.s.snapshot()
	probed := 0
	for _, e := range c.entries {
		if e.status != nil {
			probed++
		}
	}
	info := map[string]any{
		"version": r.s.version, "nriConnected": nri,
		"pods": len(c.pods), "containers": len(c.entries), "probedContainers": probed,
	}
	if r.s.tcp != nil {
		st := r.s.tcp()
		info["tcpMode"], info["tcpModeRequested"], info["tcpModeReason"] = st.Mode, st.Requested, st.Reason
	}
	b, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	return map[string]string{infoKeyProbelet: string(b)}, nil
}
