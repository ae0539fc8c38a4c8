// Package client talks to the container runtime's CRI RuntimeService
// (containerd's unix socket): ExecSync for exec probes, StopContainer for
// liveness and startup kills, and the listings the safety reconcile uses.
package client

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/internal/endpoint"
	"github.com/probelet/probelet/quietio"
	"github.com/probelet/probelet/quietio/grpcwire"
)

const (
	// DefaultEndpoint is containerd's CRI socket.
	DefaultEndpoint = endpoint.Containerd
	// DefaultTimeout bounds a CRI call, like the kubelet's
	// --runtime-request-timeout. ExecSync and StopContainer get it on top
	// of their own timeout so the runtime can clean up and answer first.
	DefaultTimeout = 2 * time.Minute
	// maxMsgSize matches the kubelet's CRI client.
	maxMsgSize = 16 << 20
)

// Client is a CRI RuntimeService client. It connects on first use and
// reconnects on its own after a runtime restart (a call made while the
// runtime is down fails fast with Unavailable).
type Client struct {
	endpoint string
	conn     *grpc.ClientConn
	rt       runtimeapi.RuntimeServiceClient
	// wire makes ExecSync calls on the caller's goroutine (wire.go);
	// nil sends them through rt (tests compare the two).
	wire    *grpcwire.Pool
	timeout time.Duration
	log     *zap.Logger
	// runtimePid is the runtime's pid as this process sees it, learned
	// from each new connection (0: not known, or not visible).
	runtimePid atomic.Int32
}

// Option configures a Client.
type Option func(*Client) error

// WithTimeout sets the per-call timeout (see DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("client: timeout %s must be positive", d)
		}
		c.timeout = d
		return nil
	}
}

// WithLogger sets the logger.
func WithLogger(l *zap.Logger) Option {
	return func(c *Client) error {
		if l == nil {
			return errors.New("client: nil logger")
		}
		c.log = l
		return nil
	}
}

// New returns a client for endpoint (see endpoint.UnixPath). It does not
// dial; the first call does.
func New(ep string, opts ...Option) (*Client, error) {
	path, err := SocketPath(ep)
	if err != nil {
		return nil, err
	}
	c := &Client{endpoint: ep, timeout: DefaultTimeout, log: zap.NewNop()}
	if !quietio.Off() { // --io=std: every call through grpc-go
		c.wire = newWirePool(path, MaxExecReply)
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	conn, err := endpoint.DialRuntimeObserved(ep, maxMsgSize, maxMsgSize, func(nc net.Conn) {
		pid, err := endpoint.PeerPid(nc)
		if err != nil {
			c.log.Debug("Cannot read the runtime's pid from its socket", zap.Error(err))
		}
		c.runtimePid.Store(pid)
	})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c.conn, c.rt = conn, runtimeapi.NewRuntimeServiceClient(conn)
	return c, nil
}

// RuntimePid is the pid of the runtime serving the client's connection as
// this process's PID namespace numbers it (SO_PEERCRED): 0 before the first
// call, or when the runtime's processes are not visible here.
func (c *Client) RuntimePid() int32 { return c.runtimePid.Load() }

// SocketPath returns the file path of a unix endpoint (endpoint.UnixPath's
// rule).
func SocketPath(ep string) (string, error) {
	path, err := endpoint.UnixPath(ep)
	if err != nil {
		return "", fmt.Errorf("runtime endpoint %w", err)
	}
	return path, nil
}

// Endpoint returns the endpoint the client was made for.
func (c *Client) Endpoint() string { return c.endpoint }

// Collectors are the client's metrics series, not registered.
func (c *Client) Collectors() []prometheus.Collector {
	if c.wire == nil {
		return nil
	}
	return []prometheus.Collector{wireConnections(c.wire)}
}

// Close releases the connections.
func (c *Client) Close() error {
	if c.wire != nil {
		c.wire.Close()
	}
	return c.conn.Close()
}
