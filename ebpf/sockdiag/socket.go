package sockdiag

import "net/netip"

// TCP states as the kernel numbers them (include/net/tcp_states.h).
const (
	StateEstablished = 1
	StateTimeWait    = 6
	StateListen      = 10
)

// Socket is one TCP socket as inet_diag reports it.
type Socket struct {
	// Cookie is the kernel's socket cookie: stable for the socket's life and
	// never reused, the identity shared with eBPF.
	Cookie uint64
	// Family is AF_INET or AF_INET6.
	Family uint8
	// State is the TCP state (StateListen, ...).
	State uint8
	// Addr is the bound local address; unspecified for a wildcard bind.
	Addr netip.Addr
	// Port is the local port.
	Port uint16
	// Peer is the remote address and port; unspecified for a listener.
	Peer netip.AddrPort
	// BoundDev is the SO_BINDTODEVICE interface index, 0 if unbound.
	BoundDev int32
	// V6Only is IPV6_V6ONLY of an AF_INET6 listener.
	V6Only bool
	// Queue is, for a listener, the number of connections waiting in the
	// accept queue.
	Queue uint32
	// Backlog is, for a listener, the accept queue limit; the queue is full
	// (further SYNs are dropped) once Queue > Backlog.
	Backlog uint32
}

// QueueFull reports whether a listener drops new connections.
func (s Socket) QueueFull() bool { return s.Queue > s.Backlog }
