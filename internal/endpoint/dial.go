package endpoint

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/probelet/probelet/quietio"
	"github.com/probelet/probelet/quietio/rawconn"
)

// runtimeBackoff paces reconnecting to a runtime: gRPC's default grows to
// two minutes, and a restarted containerd must be found again within about
// a second.
var runtimeBackoff = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// DialRuntime returns a gRPC connection to the CRI runtime at endpoint
// (see UnixPath), reading answers up to maxRecv bytes and sending
// requests up to maxSend. It does
// not dial: the first call does, and the connection reconnects on its own
// after a runtime restart.
func DialRuntime(endpoint string, maxRecv, maxSend int) (*grpc.ClientConn, error) {
	return DialRuntimeObserved(endpoint, maxRecv, maxSend, nil)
}

// DialRuntimeObserved is DialRuntime that hands every new connection to
// the runtime to observe (when not nil) before gRPC uses it.
func DialRuntimeObserved(endpoint string, maxRecv, maxSend int, observe func(net.Conn)) (*grpc.ClientConn, error) {
	path, err := UnixPath(endpoint)
	if err != nil {
		return nil, fmt.Errorf("runtime endpoint %w", err)
	}
	conn, err := grpc.NewClient("unix://"+path,
		// Reads and writes as raw system calls: an exec probe is a call
		// per period, and net's would wake the idle agent's sysmon on each.
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var c net.Conn
			var err error
			if quietio.Off() {
				var d net.Dialer
				c, err = d.DialContext(ctx, "unix", path)
			} else {
				c, err = rawconn.DialUnix(ctx, path)
			}
			if err == nil && observe != nil {
				observe(c)
			}
			return c, err
		}),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecv), grpc.MaxCallSendMsgSize(maxSend)),
		grpc.WithConnectParams(runtimeBackoff))
	if err != nil {
		return nil, fmt.Errorf("runtime endpoint %q: %w", endpoint, err)
	}
	return conn, nil
}
