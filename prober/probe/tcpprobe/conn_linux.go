//go:build linux

package tcpprobe

import (
	"context"
	"net"
	"net/netip"

	"github.com/probelet/probelet/podnet"
)

// DialRaw is DialContext for a probe's request and reply (HTTP, gRPC) on
// the quiet I/O's raw connection (rawtcp.Dialer.Dial: net's answers and
// deadlines, no wake-up of the runtime's monitor thread). An address that
// is not an IP literal and port goes to DialContext.
//
// With a pod's network namespace in ctx (podnet.WithNamespace) the socket
// is the namespace's.
func (d *Dialer) DialRaw(ctx context.Context, network, address string) (net.Conn, error) {
	addr, err := netip.ParseAddrPort(address)
	if err != nil || addr.Addr().Zone() != "" || network != "tcp" || d.control == nil || addr.Port() == 0 {
		return d.DialContext(ctx, network, address)
	}
	if ns := podnet.FromContext(ctx); ns != nil {
		return d.raw.DialFrom(ctx, addr, ns.TCPSocket)
	}
	return d.raw.Dial(ctx, addr)
}
