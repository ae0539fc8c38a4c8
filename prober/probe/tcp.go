package probe

import (
	"context"
	"net"
	"net/netip"
	"time"
)

// Origin is a network namespace other than the node's that a probe
// connects from (podnet.Namespace: the pod's own).
type Origin interface {
	// TCPSocket is a non-blocking TCP socket for ip's family made there,
	// with the kubelet's SO_LINGER.
	TCPSocket(ip netip.Addr) (int, error)
	// DialTCP is net's dial from there.
	DialTCP(ctx context.Context, addr netip.AddrPort) (net.Conn, error)
	// String names the namespace.
	String() string
}

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
	// Origin is the pod's network namespace to dial from (probe origin
	// pod); nil dials from the node's, as the kubelet does.
	Origin Origin
	// Timeout bounds the probe.
	Timeout time.Duration
}

// TCPProber answers TCP probes; the kubelet-style dialer and the eBPF
// short-circuit implement it. The returned Method says which answered.
type TCPProber interface {
	ProbeTCP(ctx context.Context, target TCPTarget) (Result, string, Method, error)
}

// InstantTCPProber is a TCPProber that can often answer without waiting:
// ProbeTCPInstant answers from memory, never blocks and does no network
// I/O; ok false means only ProbeTCP can answer this time. The engine calls
// it on its scheduling goroutine, so an in-memory answer needs no hand-off
// to a runner (a goroutine, and often a thread, woken per probe).
type InstantTCPProber interface {
	TCPProber
	ProbeTCPInstant(target TCPTarget) (res Result, output string, method Method, ok bool)
}

// TCPStarter is a TCPProber that can begin a probe without blocking, for
// the engine's scheduling goroutine: StartTCP answers at once (ok true)
// when the answer came within the call, as a dial's often does; otherwise
// it returns the probe under way (pending, for a runner to finish), or
// neither when only ProbeTCP can run this target.
type TCPStarter interface {
	TCPProber
	StartTCP(target TCPTarget) (res Result, output string, method Method, pending TCPPending, ok bool)
}

// TCPPending is a TCP probe StartTCP began. Finish waits for its answer
// until the target's timeout (counted from the start) or ctx's end, with
// ProbeTCP's results and errors, and releases it; it is called once.
type TCPPending interface {
	Finish(ctx context.Context) (Result, string, Method, error)
}
