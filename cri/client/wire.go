package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/probelet/probelet/quietio/grpcwire"
	"github.com/probelet/probelet/quietio/rawconn"
)

// ExecSync goes out on the caller's goroutine (grpcwire) over connections
// kept for the next call: an exec probe is a call per period, and
// grpc-go's hand-offs between the caller, the connection's writer and its
// reader wake two more threads of an idle agent on each, which cost the
// node more than the call (README, Performance). The runtime sees what
// grpc-go's calls show it, on a connection per call in flight.
const (
	// maxKeptConns bounds the idle connections kept: more calls at once
	// than that open connections of their own, closed after.
	maxKeptConns = 16
	// keptConnLife: a connection unused for longer is closed at the next
	// call rather than trusted (the runtime may have restarted, or be
	// about to give up on a connection it saw idle).
	keptConnLife = time.Minute
	execSyncPath = "/runtime.v1.RuntimeService/ExecSync"
	// wireAuthority is grpc-go's for a unix socket target.
	wireAuthority = "localhost"
	// maxReplyHeaders bounds a reply's headers and trailers: the runtime's
	// error texts, never near it.
	maxReplyHeaders = 1 << 20
)

var wireUserAgent = "grpc-go/" + grpc.Version

// wirePool keeps connections to the runtime's socket for calls made on
// the caller's goroutine.
type wirePool struct {
	path string
	lim  grpcwire.Limits
	// open counts the connections kept or in a call.
	open atomic.Int64
	mu   sync.Mutex
	kept []keptConn // oldest first
	shut bool
	now  func() time.Time
}

type keptConn struct {
	conn *grpcwire.Conn
	used time.Time
}

func newWirePool(path string, maxReply uint32) *wirePool {
	return &wirePool{path: path, lim: grpcwire.Limits{MaxReply: maxReply, MaxHeaderList: maxReplyHeaders}, now: time.Now}
}

// call makes a call of method on a kept connection, or a new one. A kept
// connection the runtime closed since its last call is dropped and the
// call goes on the next: nothing of it was sent. grpcwire.ErrNoRoom means
// the request was too large to go out at once, and nothing was sent.
func (p *wirePool) call(ctx context.Context, method string, req, reply proto.Message) error {
	for {
		conn, kept := p.take()
		if conn == nil {
			nc, err := rawconn.DialUnix(ctx, p.path)
			if err != nil {
				if ctx.Err() != nil {
					return status.FromContextError(ctx.Err()).Err()
				}
				// A runtime that is down: the call fails at once, as
				// grpc-go's does.
				return grpcwire.DialError(err)
			}
			conn = grpcwire.NewConn(nc, p.lim)
			p.open.Add(1)
		}
		err := conn.Call(ctx, method, wireAuthority, wireUserAgent, req, reply)
		if errors.Is(err, grpcwire.ErrSpent) && kept {
			p.closeConn(conn)
			continue
		}
		p.give(conn)
		return err
	}
}

// take returns the most recently used kept connection, closing those
// unused too long; nil when none is left.
func (p *wirePool) take() (*grpcwire.Conn, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	stale := p.now().Add(-keptConnLife)
	for len(p.kept) > 0 && p.kept[0].used.Before(stale) {
		p.closeConn(p.kept[0].conn)
		p.kept = p.kept[1:]
	}
	if len(p.kept) == 0 {
		return nil, false
	}
	k := p.kept[len(p.kept)-1]
	p.kept = p.kept[:len(p.kept)-1]
	return k.conn, true
}

// give keeps conn for the next call, or closes it.
func (p *wirePool) give(conn *grpcwire.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut || !conn.Usable() || len(p.kept) >= maxKeptConns {
		p.closeConn(conn)
		return
	}
	p.kept = append(p.kept, keptConn{conn: conn, used: p.now()})
}

// close closes the kept connections, and those in use as their calls end.
func (p *wirePool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shut = true
	for _, k := range p.kept {
		p.closeConn(k.conn)
	}
	p.kept = nil
}

func (p *wirePool) closeConn(conn *grpcwire.Conn) {
	_ = conn.Close()
	p.open.Add(-1)
}

// connections is a gauge of the pool's connections: bounded by the most
// calls at once, each an open file of probelet's and a connection
// containerd serves.
func (p *wirePool) connections() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "probelet_runtime_exec_connections",
		Help: "Connections to the runtime's socket that ExecSync calls use, kept between calls (as many as calls at once, up to 16 idle) or in a call.",
	}, func() float64 { return float64(p.open.Load()) })
}
