package proxy_test

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/cri/proxy"
)

// TestStopHandsOverAcceptedConnections: in a restart storm SIGTERM reaches
// a probelet the moment it starts serving, when it has just accepted the
// kubelet's reconnection from the socket's backlog. That connection must
// not be reset: the call on it succeeds, on this proxy or (after a GOAWAY)
// on the next one, which takes the same socket as systemd passes it.
func TestStopHandsOverAcceptedConnections(t *testing.T) {
	rt := startFakeRuntime(t)
	sock, heldFile := heldSocket(t)

	const rounds = 20
	for round := range rounds {
		// The kubelet reconnects while no probelet serves: its connection
		// waits in the backlog.
		connected := make(chan struct{})
		var once sync.Once
		conn, err := grpc.NewClient("unix://"+sock,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, "unix", sock)
				once.Do(func() { close(connected) })
				return c, err
			}))
		if err != nil {
			t.Fatal(err)
		}
		called := make(chan error, 1)
		go func() {
			_, err := runtimeapi.NewRuntimeServiceClient(conn).Version(ctxT(t), &runtimeapi.VersionRequest{})
			called <- err
		}()
		<-connected

		// This probelet is told to stop as it accepts that connection.
		ctx, cancel := context.WithCancel(context.Background())
		serveProxy(t, rt, ctx, &cancelOnAccept{Listener: fileListener(t, heldFile), cancel: cancel})
		// The next one serves until the call is answered.
		ctx, cancel = context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			serveProxy(t, rt, ctx, fileListener(t, heldFile))
		}()
		if err := <-called; err != nil {
			t.Errorf("round %d: the call failed across the restart: %v", round, err)
		}
		cancel()
		<-done
		conn.Close()
	}
}

// serveProxy runs a proxy on l until ctx ends.
func serveProxy(t *testing.T, rt *fakeRuntime, ctx context.Context, l net.Listener) {
	p, err := proxy.New(rt.endpoint(), proxy.WithRegisterer(prometheus.NewRegistry()))
	if err != nil {
		t.Error(err)
		return
	}
	defer p.Close()
	if err := p.Serve(ctx, l); err != nil {
		t.Errorf("Serve = %v", err)
	}
}

// fileListener is the held socket as a service gets it: its own descriptor.
func fileListener(t *testing.T, f *os.File) net.Listener {
	l, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// cancelOnAccept ends the proxy's context as the first connection is accepted.
type cancelOnAccept struct {
	net.Listener
	cancel context.CancelFunc
}

func (l *cancelOnAccept) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.cancel()
	}
	return c, err
}
