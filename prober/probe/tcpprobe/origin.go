package tcpprobe

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober/probe"
)

// DialFunc is how a client dials: net.Dialer.DialContext's shape.
type DialFunc = func(ctx context.Context, network, address string) (net.Conn, error)

// OriginDial is next for a ctx without a pod's network namespace, and a
// dial from that namespace for one with it (podnet.WithNamespace): for a
// client whose connections are not probes' own but must come from where
// the pod's probes do (lifecycle hooks).
func OriginDial(next DialFunc) DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if ns := podnet.FromContext(ctx); ns != nil {
			return dialFrom(ctx, ns, network, address, 0)
		}
		return next(ctx, network, address)
	}
}

// dialFrom dials address from ns with net's dial on a socket of ns
// (podnet's DialTCP), within timeout when it is positive. A host that is
// not an IP literal is looked up by the node's resolver, as the kubelet's
// dial looks it up, and its first address dialled from the pod.
func dialFrom(ctx context.Context, ns probe.Origin, network, address string, timeout time.Duration) (net.Conn, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	addr, err := resolve(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return ns.DialTCP(ctx, addr)
}

// resolve is address as an IP and port, looked up when it names a host,
// with net.Dialer's error for what it cannot resolve.
func resolve(ctx context.Context, network, address string) (netip.AddrPort, error) {
	if addr, err := netip.ParseAddrPort(address); err == nil && addr.Addr().Zone() == "" {
		return addr, nil
	}
	fail := func(err error) error { return &net.OpError{Op: "dial", Net: network, Err: err} }
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return netip.AddrPort{}, fail(err)
	}
	port, err := net.DefaultResolver.LookupPort(ctx, network, portText)
	if err != nil {
		return netip.AddrPort{}, fail(err)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.AddrPort{}, fail(err)
	}
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(port)), nil
}
