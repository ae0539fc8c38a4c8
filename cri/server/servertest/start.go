package servertest

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/lifecycle"
)

// SocketDir returns a short temporary directory (unix socket paths are
// limited to 108 bytes) removed when the test ends.
func SocketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "plt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// Served is a server running in a test.
type Served struct {
	*server.Server
	// Stop ends Serve's context and waits for Serve to return (idempotent).
	Stop func()
}

// Start serves a new server over status and view on a temporary socket
// and returns it with its unix:// endpoint; it is stopped when the test ends.
func Start(t testing.TB, status *Status, view lifecycle.View, opts ...server.Option) (*Served, string) {
	t.Helper()
	base := []server.Option{server.WithVersion("v0.0.0-test")}
	if n, ok := view.(server.NRIStatus); ok {
		base = append(base, server.WithNRIStatus(n))
	}
	srv, err := server.New(status, view, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "unix://" + filepath.Join(SocketDir(t), "run", "probelet.sock")
	if err := srv.Listen(endpoint); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &Served{Server: srv, Stop: stop}, endpoint
}

// StartFixture serves the fixture's pods and statuses, with its events
// already published to the server's event log.
func StartFixture(t testing.TB, opts ...server.Option) (*Served, string, *Status, *View) {
	t.Helper()
	status, view := NewStatus(Statuses()...), NewView(Pods()...)
	srv, endpoint := Start(t, status, view, opts...)
	WaitFor(t, "event log subscription", func() bool { n, _, _ := status.EventStats(); return n > 0 })
	for _, ev := range Events() {
		status.PublishEvent(ev)
	}
	client := apiv1.NewProbeletClient(Dial(t, endpoint))
	WaitFor(t, "events in the server's log", func() bool {
		return len(retained(t, client)) == len(Events())
	})
	return srv, endpoint, status, view
}

// retained lists the events the server holds.
func retained(t testing.TB, client apiv1.ProbeletClient) []*apiv1.Event {
	t.Helper()
	stream, err := client.Events(context.Background(), &apiv1.EventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*apiv1.Event
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
}

// Dial connects a gRPC client to endpoint; closed when the test ends.
func Dial(t testing.TB, endpoint string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// WaitFor is testutil.WaitFor, for the packages that already use servertest.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, cond)
}
