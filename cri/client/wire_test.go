package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/probelet/probelet/cri/client"
)

// TestExecSyncAnswersAsGRPCGo: ExecSync on the caller's goroutine answers
// every runtime reply as the same call through grpc-go does.
func TestExecSyncAnswersAsGRPCGo(t *testing.T) {
	srv := newCRIServer(t, &fakeCRI{})
	direct := newClient(t, srv.endpoint())
	viaGRPCGo := newClient(t, srv.endpoint(), client.ExecThroughGRPCGo())
	for _, tt := range []struct {
		name    string
		cmd     []string
		timeout time.Duration // the caller's, beside the command's 1 s
	}{
		{"success", []string{"exit", "0"}, 0},
		{"non-zero exit", []string{"exit", "3"}, 0},
		{"no output", []string{"true"}, 0},
		{"a reply just under the bound", []string{"print", "1MiB-1KiB"}, 0},
		{"a reply over the bound", []string{"print", "2MiB"}, 0},
		{"the runtime's timeout", []string{"timeout"}, 0},
		{"the runtime's timeout in text only", []string{"timeout-text"}, 0},
		{"the runtime's own error", []string{"missing"}, 0},
		{"the caller's deadline", []string{"hang"}, 20 * time.Millisecond},
		{"a command line larger than the runtime's window", []string{"exit", "1", strings.Repeat("a", 100<<10)}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			call := func(c *client.Client) string {
				ctx := context.Background()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				out, errOut, code, err := c.ExecSync(ctx, "c1", tt.cmd, time.Second)
				return fmt.Sprintf("%d bytes out, %q err, exit %d, error %v", len(out), errOut, code, err)
			}
			got, want := call(direct), call(viaGRPCGo)
			if got != want {
				t.Errorf("ExecSync = %s\ngrpc-go = %s", got, want)
			}
			if req := srv.fake.lastExec(); strings.Join(req.Cmd, " ") != strings.Join(tt.cmd, " ") {
				t.Errorf("the runtime got a command of %d bytes, want %d", len(strings.Join(req.Cmd, " ")), len(strings.Join(tt.cmd, " ")))
			}
		})
	}
}

// TestExecSyncKeepsConnections: calls one after another share a
// connection, replies larger than the connection's window included (the
// window is given back); calls at once open one each, kept for later.
func TestExecSyncKeepsConnections(t *testing.T) {
	srv := newCRIServer(t, &fakeCRI{})
	c := newClient(t, srv.endpoint())
	for i := range 5 {
		if out, _, _, err := c.ExecSync(context.Background(), "c1", []string{"print", "1MiB-1KiB"}, time.Second); err != nil || len(out) != client.MaxExecReply-1<<10 {
			t.Fatalf("call %d: %d bytes, %v", i, len(out), err)
		}
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Fatalf("5 calls one after another made %d connections, want 1", n)
	}

	const atOnce = 4
	hanging, release := make(chan struct{}), make(chan struct{})
	srv.fake.mu.Lock()
	srv.fake.hanging, srv.fake.release = hanging, release
	srv.fake.mu.Unlock()
	var wg sync.WaitGroup
	for range atOnce {
		wg.Go(func() {
			if _, _, _, err := c.ExecSync(context.Background(), "c1", []string{"wait"}, time.Second); err != nil {
				t.Errorf("a call at once: %v", err)
			}
		})
	}
	for range atOnce {
		<-hanging // all in the runtime at once
	}
	close(release)
	wg.Wait()
	if n := srv.accepted.Load(); n != atOnce {
		t.Errorf("%d calls at once made %d connections in all, want %d", atOnce, n, atOnce)
	}
	if got := connections(t, c); got != atOnce {
		t.Errorf("probelet_runtime_exec_connections = %v, want %d", got, atOnce)
	}
	for i := range 2 * atOnce {
		if _, _, _, err := c.ExecSync(context.Background(), "c1", []string{"exit", "0"}, time.Second); err != nil {
			t.Fatalf("call %d after: %v", i, err)
		}
	}
	if n := srv.accepted.Load(); n != atOnce {
		t.Errorf("calls after made %d new connections, want none", n-atOnce)
	}

	// A cancelled call's connection is not trusted again: closed. The
	// fake signals a "hang" without waiting for a reader, so the signal
	// needs room: unbuffered, a receiver not yet scheduled (a busy
	// machine) missed it and the call waited out the client's timeout.
	hung := make(chan struct{}, 1)
	srv.fake.mu.Lock()
	srv.fake.hanging = hung
	srv.fake.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-hung; cancel() }()
	if _, _, _, err := c.ExecSync(ctx, "c1", []string{"hang"}, time.Second); err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	if got := connections(t, c); got != atOnce-1 {
		t.Errorf("after a cancelled call: probelet_runtime_exec_connections = %v, want %d", got, atOnce-1)
	}
}

// connections reads the client's connection gauge.
func connections(t *testing.T, c *client.Client) float64 {
	t.Helper()
	cs := c.Collectors()
	prometheus.NewPedanticRegistry().MustRegister(cs...)
	return testutil.ToFloat64(cs[0])
}

// TestExecSyncAfterTheRuntimeLetGo: a kept connection the runtime closed
// while it was idle (its restart, its idle limit) costs no call: the
// first call after goes out on a new connection and succeeds.
func TestExecSyncAfterTheRuntimeLetGo(t *testing.T) {
	t.Run("restart", func(t *testing.T) {
		srv := newCRIServer(t, &fakeCRI{})
		c := newClient(t, srv.endpoint())
		if _, _, _, err := c.ExecSync(context.Background(), "c1", []string{"exit", "0"}, time.Second); err != nil {
			t.Fatal(err)
		}
		srv.stop()
		_, _, _, err := c.ExecSync(context.Background(), "c1", []string{"exit", "0"}, time.Second)
		if status.Code(errors.Unwrap(err)) != codes.Unavailable || !strings.Contains(err.Error(), "Error while dialing") {
			t.Fatalf("runtime down: %v, want Unavailable while dialing", err)
		}
		srv.serve()
		if _, _, _, err := c.ExecSync(context.Background(), "c1", []string{"exit", "0"}, time.Second); err != nil {
			t.Fatalf("first call after the restart: %v", err)
		}
	})
	t.Run("idle limit", func(t *testing.T) {
		const idle = 50 * time.Millisecond
		goAways := make(chan struct{}, 3)
		srv := newCRIServer(t, &fakeCRI{},
			grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: idle}),
			grpc.Creds(goAwayWatch{insecure.NewCredentials(), goAways}))
		c := newClient(t, srv.endpoint())
		for i := range 3 {
			if _, _, _, err := c.ExecSync(context.Background(), "c1", []string{"exit", "0"}, time.Second); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			// The server's GOAWAY is in the client's socket (grpc-go
			// closes the connection 5 s later, its ping unanswered).
			select {
			case <-goAways:
			case <-time.After(10 * time.Second):
				t.Fatalf("no GOAWAY %d after the idle limit", i)
			}
		}
		if n := srv.accepted.Load(); n != 3 {
			t.Errorf("3 calls past the idle limit made %d connections, want 3", n)
		}
	})
}

// goAwayWatch is the insecure transport, whose server connections signal
// goAway once each GOAWAY frame the server writes is out (on a unix
// socket: in the client's socket).
type goAwayWatch struct {
	credentials.TransportCredentials
	goAway chan<- struct{}
}

func (w goAwayWatch) ServerHandshake(nc net.Conn) (net.Conn, credentials.AuthInfo, error) {
	nc, info, err := w.TransportCredentials.ServerHandshake(nc)
	return &goAwayConn{Conn: nc, goAway: w.goAway}, info, err
}

// goAwayConn follows the frames the server writes (grpc-go's one writer
// goroutine after the handshake).
type goAwayConn struct {
	net.Conn
	goAway   chan<- struct{}
	head     []byte // the next frame's header, so far
	rest     int    // the current frame's payload bytes not yet written
	isGoAway bool   // the current frame is a GOAWAY
}

func (c *goAwayConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	for b := p[:n]; len(b) > 0; {
		if c.rest == 0 {
			k := min(len(b), 9-len(c.head))
			c.head, b = append(c.head, b[:k]...), b[k:]
			if len(c.head) < 9 {
				break
			}
			c.rest = int(c.head[0])<<16 | int(c.head[1])<<8 | int(c.head[2])
			c.isGoAway = http2.FrameType(c.head[3]) == http2.FrameGoAway
			c.head = c.head[:0]
		}
		k := min(len(b), c.rest)
		c.rest, b = c.rest-k, b[k:]
		if c.rest == 0 && c.isGoAway {
			c.isGoAway = false
			select {
			case c.goAway <- struct{}{}:
			default: // never hold up the server's writer
			}
		}
	}
	return n, err
}
