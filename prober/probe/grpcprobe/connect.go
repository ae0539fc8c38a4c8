package grpcprobe

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// dialer gives gRPC connections the probe dialer's SO_LINGER, as the
// kubelet does.
var dialer = tcpprobe.NewDialer()

// A health reply is a few bytes; the kubelet keeps gRPC's defaults (4 MiB
// messages, 16 MiB of headers), which a hostile target can make the node
// buffer for every probe in flight. Beyond these limits the call fails,
// a Failure as it is for the kubelet beyond its.
const (
	// MaxReplyBytes bounds a health reply message.
	MaxReplyBytes = 64 << 10
	// MaxHeaderListBytes bounds a reply's headers and trailers, as
	// httpprobe.MaxResponseHeaderBytes does an HTTP probe's.
	MaxHeaderListBytes = 1 << 20
)

// connect opens a plaintext connection to addr through dial and waits until it is ready
// or ctx ends. The passthrough scheme dials addr as given, with no resolver.
func connect(ctx context.Context, dial dialFunc, addr string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithUserAgent(UserAgent),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxReplyBytes)),
		grpc.WithMaxHeaderListSize(MaxHeaderListBytes),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return dial(ctx, "tcp", a)
		}),
	)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, conn); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// waitReady is what the kubelet's blocking dial (grpc.WithBlock) does:
// failed attempts are retried with backoff and never reported; only the
// deadline ends the wait, with ctx.Err().
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	for {
		conn.Connect()
		s := conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}
