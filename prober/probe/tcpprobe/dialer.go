// Package tcpprobe answers TCP probes the way the kubelet does: by
// completing a real TCP handshake and closing the socket at once.
package tcpprobe

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/quietio/rawtcp"
)

var _ probe.TCPProber = (*Dialer)(nil)

// Dialer dials probe targets with the kubelet's socket options. It is the
// TCP prober, and the HTTP and gRPC probers dial through it too.
type Dialer struct {
	// control sets socket options before connect; nil where unsupported.
	control func(network, address string, c syscall.RawConn) error
	// raw is the quiet I/O's dialer (StartTCP, DialRaw): it holds the
	// sockets whose close it put off.
	raw rawtcp.Dialer
}

// NewDialer returns a Dialer that sets SO_LINGER {1, 1} on every socket, as
// the kubelet's probe dialer does, so probe sockets leave TIME_WAIT after
// one second instead of sixty while still closing with a FIN.
func NewDialer() *Dialer {
	return &Dialer{control: setLinger}
}

// DialContext connects to address within ctx, with the probe socket
// options, from the pod's network namespace when ctx carries one
// (podnet.WithNamespace).
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if ns := podnet.FromContext(ctx); ns != nil {
		return dialFrom(ctx, ns, network, address, 0)
	}
	return d.netDialer(0).DialContext(ctx, network, address)
}

// ProbeTCP connects to target.Host:target.Port within target.Timeout and
// closes the connection at once. A connect that fails for any reason — a
// refusal, a timeout, a port no dial can use — is a Failure carrying the
// dial error text, as the kubelet's TCP prober checks no port; a missing
// timeout or a cancelled ctx is an error, as is a socket the pod's network
// namespace could not give. Like the kubelet, the dial happens from the
// agent's own network namespace, or from the target's Origin.
func (d *Dialer) ProbeTCP(ctx context.Context, target probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	if target.Timeout <= 0 {
		return probe.Unknown, "", probe.MethodDial, fmt.Errorf("tcp probe: timeout %v must be positive", target.Timeout)
	}
	addr := net.JoinHostPort(target.Host, strconv.Itoa(target.Port))
	var conn net.Conn
	var err error
	if target.Origin != nil {
		conn, err = dialFrom(ctx, target.Origin, "tcp", addr, target.Timeout)
	} else {
		conn, err = d.netDialer(target.Timeout).DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return probe.Unknown, "", probe.MethodDial, fmt.Errorf("tcp probe of %s: %w", addr, ctx.Err())
		}
		if podnet.IsSocketError(err) {
			return probe.Unknown, "", probe.MethodDial, fmt.Errorf("tcp probe of %s: %w", addr, err)
		}
		return probe.Failure, err.Error(), probe.MethodDial, nil
	}
	// A close error says nothing about the target's health; the kubelet
	// only logs it.
	_ = conn.Close()
	return probe.Success, "", probe.MethodDial, nil
}

func (d *Dialer) netDialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, Control: d.control}
}
