package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/internal/selfsigned"
	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/kube/stateauth"
)

// StateServer serves the probe-state API's reads of this node on a
// listener (--state-listen); cri/server's Server is one.
type StateServer interface {
	ServeState(ctx context.Context, lis net.Listener, cert tls.Certificate, guard server.StateGuard) error
}

var _ StateServer = (*server.Server)(nil)

// stateListener is --state-listen, opened while the API server side is
// built: the heartbeat writes its port and certificate into the Lease.
type stateListener struct {
	lis      net.Listener
	cert     tls.Certificate
	pin      string // hex SHA-256 of cert
	endpoint string // as the Lease says it: ":PORT" for every address
	guard    *stateauth.Guard
}

func newStateListener(addr, node string, client kube.Client) (*stateListener, error) {
	cert, pin, err := selfsigned.New("probelet-state "+node, time.Now())
	if err != nil {
		return nil, fmt.Errorf("--state-listen: certificate: %w", err)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--state-listen: %w", err)
	}
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = ""
	}
	port := strconv.Itoa(lis.Addr().(*net.TCPAddr).Port)
	return &stateListener{lis: lis, cert: cert, pin: pin, endpoint: net.JoinHostPort(host, port),
		guard: stateauth.New(client, node, nil)}, nil
}

// serveState serves --state-listen until ctx ends.
func (a *Agent) serveState(p *parts) func(context.Context) error {
	return func(ctx context.Context) error {
		if p.kube == nil || p.kube.state == nil {
			return nil
		}
		st := p.kube.state
		srv, ok := p.socket.(StateServer)
		if !ok {
			st.lis.Close()
			return fmt.Errorf("--state-listen: the socket server (%T) cannot serve probe state", p.socket)
		}
		if err := srv.ServeState(ctx, st.lis, st.cert, st.guard.GRPC); err != nil {
			return errServe("state listener", err)
		}
		return nil
	}
}
