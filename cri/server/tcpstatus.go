package server

import (
	"errors"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ConditionTCPShortCircuit is probelet's Status condition for TCP probes:
// true while they are answered from the eBPF listener table.
const ConditionTCPShortCircuit = "TCPShortCircuit"

// TCPStatus says how TCP probes are answered (the agent fills it from the
// TCP prober).
type TCPStatus struct {
	// Requested is --tcp-mode: "auto", "ebpf" or "dial".
	Requested string
	// Mode is the mode in force: "ebpf" or "dial"; "" while the eBPF
	// listener tracker loads.
	Mode string
	// Reason says why Mode is not what Requested asked for: the tracker's
	// load error when auto fell back to dialing.
	Reason string
}

// WithTCPStatus sets what says how TCP probes are answered (the
// TCPShortCircuit condition, Version's tcpMode). Without it neither is
// reported.
func WithTCPStatus(f func() TCPStatus) Option {
	return func(s *Server) error {
		if f == nil {
			return errors.New("server: nil TCP status")
		}
		s.tcp = f
		return nil
	}
}

// tcpCondition is the TCPShortCircuit condition for st: false whenever TCP
// probes dial, with the reason an operator acts on.
func tcpCondition(st TCPStatus) *runtimeapi.RuntimeCondition {
	c := &runtimeapi.RuntimeCondition{Type: ConditionTCPShortCircuit, Status: st.Mode == "ebpf"}
	switch {
	case c.Status:
	case st.Mode == "":
		c.Reason = "TrackerLoading"
		c.Message = "the eBPF listener tracker is loading; probing starts once it has"
	case st.Requested == "dial":
		c.Reason = "TCPModeDial"
		c.Message = "--tcp-mode dial: TCP probes dial, as the kubelet's do"
	default:
		c.Reason = "TrackerUnavailable"
		c.Message = "--tcp-mode " + st.Requested + ": the eBPF listener tracker did not load, so TCP probes dial: " + st.Reason
	}
	return c
}
