package grpcwire

import (
	"context"
	"math/rand/v2"
	"net"
	"time"

	"google.golang.org/protobuf/proto"
)

// Call makes one unary call on a connection of its own, on the calling
// goroutine: dial, write the connection preface, settings and the request
// in one write, and read frames until the reply's trailers. grpc-go hands
// the same exchange between its resolver, balancer, connection reader,
// writer and the caller, and each hand-off wakes a thread in an otherwise
// idle agent, which costs the node more than the exchange
// (hack/bench/engine).
//
// What the caller sees is grpc-go's ClientConn with a blocking dial, as
// the kubelet's gRPC prober uses it: a connection is ready once the
// server's SETTINGS came; until then a failed attempt is retried with
// grpc-go's backoff and only ctx's end stops it (a *ConnectError); the
// call's failures are grpc-go's status errors (errors.go). The request goes
// out before the server's SETTINGS, which HTTP/2 allows and no server can
// tell from grpc-go's.
func Call(ctx context.Context, dial func(ctx context.Context, network, address string) (net.Conn, error),
	addr, method, userAgent string, req, reply proto.Message, lim Limits) error {
	msg, err := proto.Marshal(req)
	if err != nil {
		return errMarshal(err)
	}
	for failures := 0; ; failures++ {
		c, s, err := open(ctx, dial, addr, method, userAgent, msg, lim)
		if err == nil {
			err = c.Await(s, reply)
			_ = c.Close()
			return err
		}
		if ctx.Err() != nil || !sleep(ctx, connectBackoff(failures)) {
			return &ConnectError{Err: ctx.Err()}
		}
	}
}

// ConnectError is a call whose connection never got ready before ctx
// ended; Err is ctx's error.
type ConnectError struct{ Err error }

func (e *ConnectError) Error() string { return e.Err.Error() }
func (e *ConnectError) Unwrap() error { return e.Err }

// open dials addr, sends the preface, settings and the call, and reads the
// server's SETTINGS: what grpc-go waits for before it calls a connection
// ready. Any failure before then is a failed connection attempt.
func open(ctx context.Context, dial func(ctx context.Context, network, address string) (net.Conn, error),
	addr, method, userAgent string, msg []byte, lim Limits) (*Conn, *Stream, error) {
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	c := NewConn(nc, lim)
	c.Watch(ctx)
	s, err := c.Send(ctx, method, addr, userAgent, msg)
	if err == nil {
		err = c.AwaitSettings()
	}
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return c, s, nil
}

// connectBackoff is grpc-go's default wait after the nth failed connection
// attempt: 1 s, then ×1.6 each, ±20%, at most 120 s.
func connectBackoff(n int) time.Duration {
	const base, multiplier, jitter, most = float64(time.Second), 1.6, 0.2, float64(120 * time.Second)
	if n == 0 {
		return time.Second
	}
	b := base
	for ; b < most && n > 0; n-- {
		b *= multiplier
	}
	b = min(b, most) * (1 + jitter*(rand.Float64()*2-1))
	return time.Duration(b)
}

// sleep waits d or until ctx ends (false). A Go timer: it runs only after
// a failed connection attempt.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
