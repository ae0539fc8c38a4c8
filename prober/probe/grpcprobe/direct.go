package grpcprobe

import (
	"context"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/probelet/probelet/quietio/grpcwire"
)

// checkDirect is one Health/Check on the calling goroutine: dial, write
// the connection preface, settings and the request in one write, and read
// frames until the reply's trailers. grpc-go hands the same exchange
// between its resolver, balancer, connection reader, writer and the caller,
// and each hand-off wakes a thread in an otherwise idle agent, which costs
// the node more than the exchange (hack/bench/engine).
//
// What the probe sees is grpc-go's, as the kubelet uses it: a connection
// is ready once the server's SETTINGS came; until then a failed attempt is
// retried with grpc-go's backoff and only the deadline ends the wait
// (a *connectError); the call's failures are grpc-go's status errors, with
// its codes and texts (direct_test.go runs both side by side against the
// same targets). The request goes out before the server's SETTINGS, which
// HTTP/2 allows and no server can tell from grpc-go's.
func checkDirect(ctx context.Context, addr, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	msg, err := proto.Marshal(&healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return 0, status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
	}
	for failures := 0; ; failures++ {
		x, err := open(ctx, addr, msg)
		if err == nil {
			st, err := x.await()
			x.close()
			return st, err
		}
		if ctx.Err() != nil {
			return 0, &connectError{err: ctx.Err()}
		}
		if !sleep(ctx, connectBackoff(failures)) {
			return 0, &connectError{err: ctx.Err()}
		}
	}
}

// connectError is a connection that never got ready before the deadline.
type connectError struct{ err error }

func (e *connectError) Error() string { return e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

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

// limits are the health reply's: see MaxReplyBytes.
var limits = grpcwire.Limits{MaxReply: MaxReplyBytes, MaxHeaderList: MaxHeaderListBytes}

const healthCheck = "/grpc.health.v1.Health/Check"

// exchange is one connection with the call on it under way.
type exchange struct {
	conn   *grpcwire.Conn
	stream *grpcwire.Stream
}

// open dials addr, sends the preface, settings and the call, and reads the
// server's SETTINGS: what grpc-go waits for before it calls a connection
// ready. Any failure before then is a failed connection attempt.
func open(ctx context.Context, addr string, msg []byte) (*exchange, error) {
	nc, err := dialer.DialRaw(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := grpcwire.NewConn(nc, limits)
	c.Watch(ctx)
	s, err := c.Send(ctx, healthCheck, addr, userAgent, msg)
	if err == nil {
		err = c.AwaitSettings()
	}
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return &exchange{conn: c, stream: s}, nil
}

// userAgent is what grpc-go sends for the kubelet's WithUserAgent.
var userAgent = UserAgent + " grpc-go/" + grpc.Version

func (x *exchange) close() { _ = x.conn.Close() }

// await reads the reply and returns its serving status.
func (x *exchange) await() (healthpb.HealthCheckResponse_ServingStatus, error) {
	var resp healthpb.HealthCheckResponse
	if err := x.conn.Await(x.stream, &resp); err != nil {
		return 0, err
	}
	return resp.GetStatus(), nil
}
