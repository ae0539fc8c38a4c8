package grpcwire

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/internal/testutil"
)

type execOK struct {
	runtimeapi.UnimplementedRuntimeServiceServer
}

func (execOK) ExecSync(context.Context, *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	return &runtimeapi.ExecSyncResponse{}, nil
}

// TestPoolClosesConnectionsUnusedTooLong: a connection unused for over
// KeptLife is closed at the next call, which goes on a new one; one used
// within it is kept.
func TestPoolClosesConnectionsUnusedTooLong(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cri.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, execOK{})
	go func() { _ = srv.Serve(testutil.CountAccepts{Listener: ln, N: &accepted}) }()
	t.Cleanup(srv.Stop)

	now := time.Unix(1000, 0)
	const keptConnLife = time.Minute
	p := NewPool(PoolOptions{
		Dial:   func(ctx context.Context) (net.Conn, error) { return new(net.Dialer).DialContext(ctx, "unix", path) },
		Limits: Limits{MaxReply: 1 << 20, MaxHeaderList: 1 << 20}, MaxKept: 16, KeptLife: keptConnLife,
	})
	p.now = func() time.Time { return now }
	defer p.Close()
	for _, tt := range []struct {
		after       time.Duration
		connections int32 // made in all
	}{
		{0, 1},
		{keptConnLife, 1},
		{keptConnLife + time.Second, 2},
		{time.Second, 2},
	} {
		now = now.Add(tt.after)
		if err := p.Call(context.Background(), "/runtime.v1.RuntimeService/ExecSync", &runtimeapi.ExecSyncRequest{ContainerId: "c1", Cmd: []string{"true"}}, new(runtimeapi.ExecSyncResponse)); err != nil {
			t.Fatalf("a call %s after the last: %v", tt.after, err)
		}
		if n := accepted.Load(); n != tt.connections {
			t.Errorf("a call %s after the last: %d connections in all, want %d", tt.after, n, tt.connections)
		}
		if n := p.open.Load(); n != 1 {
			t.Errorf("a call %s after the last: %d open, want 1", tt.after, n)
		}
	}
}
