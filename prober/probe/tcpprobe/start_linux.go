//go:build linux

package tcpprobe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/quietio"
	"github.com/probelet/probelet/quietio/rawtcp"
)

// StartTCP is ProbeTCP begun without blocking, for the engine's scheduling
// goroutine, on the quiet I/O's raw dial (quietio/rawtcp): the socket with
// the kubelet's SO_LINGER {1, 1}, a non-blocking connect, and — when the
// handshake completed or was refused within connect, as it mostly is for a
// pod on this node — the answer and the close, with ok true. Otherwise
// pending carries the connection in progress, and its Finish, on a runner,
// waits for it as ProbeTCP would. A target it does not dial this way (a
// host that is not an IP literal, a port no dial can use, --io=std) gets
// ok false and no pending: the caller runs ProbeTCP.
//
// On the wire it is the kubelet's dial: SYN, and a FIN once connected — or
// a RST when the target already sent data, as the kubelet's close does
// with data unread.
func (d *Dialer) StartTCP(target probe.TCPTarget) (res probe.Result, output string, method probe.Method, pending probe.TCPPending, ok bool) {
	if d.control == nil || target.Timeout <= 0 || target.Port < 1 || target.Port > 65535 || quietio.Off() {
		return probe.Unknown, "", probe.MethodDial, nil, false
	}
	ip, err := netip.ParseAddr(target.Host)
	if err != nil || ip.Zone() != "" {
		return probe.Unknown, "", probe.MethodDial, nil, false
	}
	addr := netip.AddrPortFrom(ip.Unmap(), uint16(target.Port))
	var sock rawtcp.Socket
	if target.Origin != nil {
		sock = target.Origin.TCPSocket
	}
	c, err := d.raw.StartFrom(addr, sock)
	switch {
	case podnet.IsSocketError(err):
		// ProbeTCP meets it again and reports it: a prober error.
		return probe.Unknown, "", probe.MethodDial, nil, false
	case err != nil:
		return probe.Failure, err.Error(), probe.MethodDial, nil, true
	case c == nil:
		return probe.Success, "", probe.MethodDial, nil, true
	}
	return probe.Unknown, "", probe.MethodDial, &started{c: c, addr: addr, deadline: time.Now().Add(target.Timeout)}, false
}

// started is a StartTCP whose handshake is under way.
type started struct {
	c        *rawtcp.Pending
	addr     netip.AddrPort
	deadline time.Time // when the probe's timeout ends
}

// Finish waits for the handshake until the probe's timeout (counted from
// StartTCP) or ctx's end, and closes the socket as the kubelet does.
func (s *started) Finish(ctx context.Context) (probe.Result, string, probe.Method, error) {
	err := s.c.Finish(ctx, s.deadline)
	var dialErr *net.OpError
	switch {
	case ctx.Err() != nil:
		return probe.Unknown, "", probe.MethodDial, probeCancelled(s.addr, ctx.Err())
	case errors.As(err, &dialErr):
		return probe.Failure, err.Error(), probe.MethodDial, nil
	case err != nil:
		return probe.Unknown, "", probe.MethodDial, err
	}
	return probe.Success, "", probe.MethodDial, nil
}

// probeCancelled is ProbeTCP's error for a probe whose ctx ended.
func probeCancelled(addr netip.AddrPort, err error) error {
	return fmt.Errorf("tcp probe of %s: %w", addr, err)
}
