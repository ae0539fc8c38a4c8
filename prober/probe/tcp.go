package probe

import (
	"context"
	"time"
)

// TCPTarget is what a TCP probe connects to.
type TCPTarget struct {
	// Host is the address dialed (the probe's host field or the pod IP).
	Host string
	// Port is the resolved port number.
	Port int
	// InPod is true when Host is one of the pod's own IPs, so the pod's
	// network namespace alone decides the answer.
	InPod bool
	// NetNSPath is the pod's network namespace path, empty if unknown.
	NetNSPath string
	// Timeout bounds the probe.
	Timeout time.Duration
}

// TCPProber answers TCP probes; the kubelet-style dialer and the eBPF
// short-circuit implement it. The returned Method says which answered.
type TCPProber interface {
	ProbeTCP(ctx context.Context, target TCPTarget) (Result, string, Method, error)
}
