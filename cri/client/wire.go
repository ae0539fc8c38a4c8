package client

import (
	"context"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/probelet/probelet/quietio/grpcwire"
	"github.com/probelet/probelet/quietio/rawconn"
)

// ExecSync goes out on the caller's goroutine (the quiet I/O's
// grpcwire.Pool) over connections kept for the next call: an exec probe is
// a call per period, and grpc-go's hand-offs between the caller, the
// connection's writer and its reader wake two more threads of an idle
// agent on each, which cost the node more than the call (README,
// Performance). The runtime sees what grpc-go's calls show it, on a
// connection per call in flight.
const (
	// maxKeptConns bounds the idle connections kept.
	maxKeptConns = 16
	// keptConnLife: a connection unused for longer is closed at the next
	// call rather than trusted (the runtime may have restarted).
	keptConnLife = time.Minute
	execSyncPath = "/runtime.v1.RuntimeService/ExecSync"
	// wireAuthority is grpc-go's for a unix socket target.
	wireAuthority = "localhost"
	// maxReplyHeaders bounds a reply's headers and trailers: the runtime's
	// error texts, never near it.
	maxReplyHeaders = 1 << 20
)

// newWirePool is the pool of connections to the runtime's socket at path.
func newWirePool(path string, maxReply uint32) *grpcwire.Pool {
	return grpcwire.NewPool(grpcwire.PoolOptions{
		Dial:      func(ctx context.Context) (net.Conn, error) { return rawconn.DialUnix(ctx, path) },
		Authority: wireAuthority,
		UserAgent: "grpc-go/" + grpc.Version,
		Limits:    grpcwire.Limits{MaxReply: maxReply, MaxHeaderList: maxReplyHeaders},
		MaxKept:   maxKeptConns,
		KeptLife:  keptConnLife,
	})
}

// wireConnections is a gauge of the pool's connections: bounded by the
// most calls at once, each an open file of probelet's and a connection
// containerd serves.
func wireConnections(p *grpcwire.Pool) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "probelet_runtime_exec_connections",
		Help: "Connections to the runtime's socket that ExecSync calls use, kept between calls (as many as calls at once, up to 16 idle) or in a call.",
	}, func() float64 { return float64(p.Open()) })
}
