package listeners

import "net/netip"

// MaxWatched is how many listeners of one port the kernel side watches for
// accept-queue overflow; tracker.c's MAX_PORT_LISTENERS must match.
const MaxWatched = 8

// Listener is one TCP socket in LISTEN state.
type Listener struct {
	// SK is the kernel socket pointer, the key of the eBPF maps; 0 when the
	// listener was learned from sock_diag only.
	SK uint64
	// Cookie is the socket cookie, the key shared with sock_diag; 0 until
	// known.
	Cookie uint64
	// NetNS is the network namespace inode.
	NetNS uint32
	// Addr is the bound address: IPv4 for an AF_INET socket, IPv6 (possibly
	// v4-mapped) for AF_INET6; unspecified for a wildcard bind.
	Addr netip.Addr
	// Port is the local port; 0 while listen() without bind() is choosing it.
	Port uint16
	// BoundDev is the SO_BINDTODEVICE interface index, 0 if none.
	BoundDev int32
	// V6Only is IPV6_V6ONLY of an AF_INET6 socket.
	V6Only bool
	// Queue and Backlog are the accept queue length and limit when last
	// seen; the kernel drops SYNs while Queue > Backlog.
	Queue, Backlog uint32
	// Full is set when the queue was seen over its limit; it is a hint to
	// re-read the queue, never an answer by itself.
	Full bool

	seq uint64 // table sequence number of the last change
}

// inet6 reports whether l is an AF_INET6 socket.
func (l *Listener) inet6() bool { return !l.Addr.Is4() }

// PortKey names a port in a network namespace.
type PortKey struct {
	NetNS uint32
	Port  uint16
}
