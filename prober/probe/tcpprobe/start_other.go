//go:build !linux

package tcpprobe

import (
	"context"
	"net"

	"github.com/probelet/probelet/prober/probe"
)

// StartTCP declines where the raw dial is not built: ProbeTCP runs.
func (d *Dialer) StartTCP(probe.TCPTarget) (probe.Result, string, probe.Method, probe.TCPPending, bool) {
	return probe.Unknown, "", probe.MethodDial, nil, false
}

// DialRaw is DialContext where the raw connection is not built.
func (d *Dialer) DialRaw(ctx context.Context, network, address string) (net.Conn, error) {
	return d.DialContext(ctx, network, address)
}
