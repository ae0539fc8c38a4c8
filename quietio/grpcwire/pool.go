package grpcwire

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Pool makes unary calls on the caller's goroutine over connections it
// keeps for the next call (a connection per call in flight, as grpc-go's
// would show the server one stream each), to one server.
type Pool struct {
	dial                 func(ctx context.Context) (net.Conn, error)
	authority, userAgent string
	lim                  Limits
	maxKept              int
	keptLife             time.Duration
	// open counts the connections kept or in a call.
	open atomic.Int64
	mu   sync.Mutex
	kept []keptConn // oldest first
	shut bool
	now  func() time.Time
}

type keptConn struct {
	conn *Conn
	used time.Time
}

// PoolOptions say how a Pool reaches its server and what it keeps.
type PoolOptions struct {
	// Dial connects to the server.
	Dial func(ctx context.Context) (net.Conn, error)
	// Authority and UserAgent are the calls' :authority and user-agent
	// (grpc-go's for the same target).
	Authority, UserAgent string
	Limits               Limits
	// MaxKept bounds the idle connections kept: more calls at once than
	// that open connections of their own, closed after.
	MaxKept int
	// KeptLife: a connection unused for longer is closed at the next call
	// rather than trusted (the server may have restarted, or be about to
	// give up on a connection it saw idle).
	KeptLife time.Duration
}

// NewPool makes a Pool; it dials nothing until the first call.
func NewPool(o PoolOptions) *Pool {
	return &Pool{dial: o.Dial, authority: o.Authority, userAgent: o.UserAgent, lim: o.Limits,
		maxKept: o.MaxKept, keptLife: o.KeptLife, now: time.Now}
}

// Call makes a call of method on a kept connection, or a new one. A kept
// connection the server closed since its last call is dropped and the call
// goes on the next: nothing of it was sent. ErrNoRoom means the request was
// too large to go out at once, and nothing was sent.
func (p *Pool) Call(ctx context.Context, method string, req, reply proto.Message) error {
	for {
		conn, kept := p.take()
		if conn == nil {
			nc, err := p.dial(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return status.FromContextError(ctx.Err()).Err()
				}
				// A server that is down: the call fails at once, as
				// grpc-go's does.
				return DialError(err)
			}
			conn = NewConn(nc, p.lim)
			p.open.Add(1)
		}
		err := conn.Call(ctx, method, p.authority, p.userAgent, req, reply)
		if errors.Is(err, ErrSpent) && kept {
			p.closeConn(conn)
			continue
		}
		p.give(conn)
		return err
	}
}

// Open is how many connections are kept or in a call: bounded by the most
// calls at once, each an open file here and a connection the server
// serves.
func (p *Pool) Open() int64 { return p.open.Load() }

// take returns the most recently used kept connection, closing those
// unused too long; nil when none is left.
func (p *Pool) take() (*Conn, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	stale := p.now().Add(-p.keptLife)
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
func (p *Pool) give(conn *Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut || !conn.Usable() || len(p.kept) >= p.maxKept {
		p.closeConn(conn)
		return
	}
	p.kept = append(p.kept, keptConn{conn: conn, used: p.now()})
}

// Close closes the kept connections, and those in use as their calls end.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shut = true
	for _, k := range p.kept {
		p.closeConn(k.conn)
	}
	p.kept = nil
}

func (p *Pool) closeConn(conn *Conn) {
	_ = conn.Close()
	p.open.Add(-1)
}
